-- Unit tests of the plugin's pure parts (no server needed), in a headless Neovim:
--   nvim --headless --clean -u NONE -c "luafile editors/neovim/test/unit.lua"
-- Prints one line per failed check and a closing "unit: N passed, M failed"; exits non-zero on failure.
local plugin_dir = os.getenv('CUDARACE_PLUGIN_DIR') or vim.fn.fnamemodify('editors/neovim', ':p')
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd('filetype on')
local cudarace = require('cudarace')

local passed, failed = 0, 0
local function test(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
  else
    failed = failed + 1
    io.stderr:write(string.format('FAIL %s: %s\n', name, tostring(err)))
  end
end
local function eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(string.format('%s: expected %s, got %s', what or 'value', vim.inspect(b), vim.inspect(a)), 2)
  end
end

test('parse_dim accepts lists, numbers and strings', function()
  eq(cudarace.parse_dim({ 256 }), { 256, 1, 1 })
  eq(cudarace.parse_dim({ 16, 16 }), { 16, 16, 1 })
  eq(cudarace.parse_dim(64), { 64, 1, 1 })
  eq(cudarace.parse_dim('256'), { 256, 1, 1 })
  eq(cudarace.parse_dim('16,16'), { 16, 16, 1 })
  eq(cudarace.parse_dim('16x16'), { 16, 16, 1 })
  eq(cudarace.parse_dim(' 8 8 4 '), { 8, 8, 4 })
  eq(cudarace.parse_dim('[32, 4]'), { 32, 4, 1 })
end)

test('parse_dim rejects what is not 1-3 positive integers', function()
  for _, bad in ipairs({ '', 'abc', '0', '-1', '1.5', '1,2,3,4', {}, { 0 }, { 'a' }, true }) do
    local dims, why = cudarace.parse_dim(bad)
    eq(dims, nil, 'parse_dim(' .. vim.inspect(bad) .. ')')
    assert(type(why) == 'string')
  end
end)

test('server_options normalizes dims and passes the rest through', function()
  local opts = cudarace.server_options({ blockDim = '16,16', gridDim = { 64 }, possibleSeverity = 'hint', timeoutMs = 500, gridChecks = false })
  eq(opts, { blockDim = { 16, 16, 1 }, gridDim = { 64, 1, 1 }, possibleSeverity = 'hint', timeoutMs = 500, gridChecks = false })
end)

test('server_options is a JSON object even when empty', function()
  eq(vim.fn.json_encode(cudarace.server_options({})), '{}')
  eq(vim.fn.json_encode(cudarace.server_options(nil)), '{}')
  eq(vim.fn.json_encode(cudarace.server_options({ blockDim = '' })), '{}')
end)

test('resolve_cmd: explicit cmd, then $CUDARACE_SERVER_PATH, then PATH, else how to fix', function()
  local exe = vim.fn.tempname()
  vim.fn.writefile({ '#!/bin/sh' }, exe)
  vim.fn.setfperm(exe, 'rwxr-xr-x')
  eq(cudarace.resolve_cmd({ exe, 'lsp' }), { exe, 'lsp' })
  eq(cudarace.resolve_cmd(exe), { exe, 'lsp' })
  local cmd, err = cudarace.resolve_cmd({ '/nonexistent/cudarace', 'lsp' })
  eq(cmd, nil)
  assert(err:find('/nonexistent/cudarace', 1, true), err)

  local saved_env, saved_path = vim.env.CUDARACE_SERVER_PATH, vim.env.PATH
  vim.env.CUDARACE_SERVER_PATH = exe
  eq(cudarace.resolve_cmd(nil), { exe, 'lsp' })
  vim.env.CUDARACE_SERVER_PATH = '/nonexistent/cudarace'
  cmd, err = cudarace.resolve_cmd(nil)
  eq(cmd, nil)
  assert(err:find('CUDARACE_SERVER_PATH', 1, true), err)

  vim.env.CUDARACE_SERVER_PATH = nil
  local bindir = vim.fn.tempname()
  vim.fn.mkdir(bindir, 'p')
  vim.fn.writefile({ '#!/bin/sh' }, bindir .. '/cudarace')
  vim.fn.setfperm(bindir .. '/cudarace', 'rwxr-xr-x')
  vim.env.PATH = bindir
  eq(cudarace.resolve_cmd(nil), { 'cudarace', 'lsp' })
  vim.env.PATH = '/nonexistent'
  cmd, err = cudarace.resolve_cmd(nil)
  eq(cmd, nil)
  assert(err:find('cargo install', 1, true), err)
  vim.env.CUDARACE_SERVER_PATH, vim.env.PATH = saved_env, saved_path
end)

test('find_root: nearest folder with a marker, else the file\'s folder', function()
  local top = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(top .. '/proj/src/kernels', 'p')
  vim.fn.writefile({}, top .. '/proj/CMakeLists.txt')
  eq(cudarace.find_root(top .. '/proj/src/kernels/a.cu'), top .. '/proj')
  vim.fn.mkdir(top .. '/loose', 'p')
  eq(cudarace.find_root(top .. '/loose/b.cu', { 'no-such-marker' }), top .. '/loose')
end)

test('ftdetect: .cu and .cuh are cuda', function()
  for _, name in ipairs({ 'x.cu', 'x.cuh' }) do
    vim.cmd('edit ' .. vim.fn.tempname() .. name)
    eq(vim.bo.filetype, 'cuda', name)
    vim.cmd('bwipeout!')
  end
end)

test('setup() without a server: one clear error, no crash', function()
  local messages = {}
  local saved_notify = vim.notify
  vim.notify = function(msg)
    table.insert(messages, msg)
  end
  local saved_env, saved_path = vim.env.CUDARACE_SERVER_PATH, vim.env.PATH
  vim.env.CUDARACE_SERVER_PATH, vim.env.PATH = nil, '/nonexistent'
  cudarace.setup({})
  vim.cmd('edit ' .. vim.fn.tempname() .. 'a.cu')
  vim.cmd('edit ' .. vim.fn.tempname() .. 'b.cu')
  vim.notify, vim.env.CUDARACE_SERVER_PATH, vim.env.PATH = saved_notify, saved_env, saved_path
  eq(#messages, 1, 'number of messages')
  assert(messages[1]:find('no `cudarace` binary found', 1, true), messages[1])
  eq(#cudarace.client_ids(), 0, 'clients')
end)

test('api: the newest the running Neovim has; a bad setup({ api }) is reported and ignored', function()
  local expect = 'start_client'
  if vim.fn.has('nvim-0.11') == 1 then
    expect = 'config'
  elseif vim.lsp.start ~= nil then
    expect = 'start'
  end
  local messages = {}
  local saved_notify = vim.notify
  vim.notify = function(msg)
    table.insert(messages, msg)
  end
  local saved_env, saved_path = vim.env.CUDARACE_SERVER_PATH, vim.env.PATH
  vim.env.CUDARACE_SERVER_PATH, vim.env.PATH = nil, '/nonexistent'
  cudarace.setup({ api = 'bogus' })
  local chosen = cudarace.api()
  cudarace.setup({ api = 'start_client' })
  local forced = cudarace.api()
  vim.notify, vim.env.CUDARACE_SERVER_PATH, vim.env.PATH = saved_notify, saved_env, saved_path
  eq(chosen, expect, 'api()')
  eq(forced, 'start_client', 'forced api()')
  assert(messages[1] and messages[1]:find('bogus', 1, true), vim.inspect(messages))
end)

io.stdout:write(string.format('unit: %d passed, %d failed\n', passed, failed))
if failed > 0 then
  vim.cmd('cquit 1')
end
vim.cmd('qall!')
