-- End-to-end test of the Neovim plugin against the real server, in a headless Neovim:
--   open the racy fixture → diagnostics on the marked lines with the right codes, on the racy access
--   and its partner → hover on the racy access shows the witness table → the "verified"
--   __syncthreads() code action → applied, indented like the loop body → the data-race diagnostic
--   goes away (and the divergent barrier stays reported) → a second file's divergent barrier is
--   reported → the blockDim setting changes the assumed launch (update_settings).
-- Run by test/run.sh (which sets CUDARACE_BIN, CUDARACE_PLUGIN_DIR and CUDARACE_FIXTURE). Prints
-- timings to stdout; any failure exits non-zero through `cquit`.

local WAIT_MS = tonumber(os.getenv('CUDARACE_E2E_WAIT_MS') or '') or 60000
local GLOBAL_MS = tonumber(os.getenv('CUDARACE_E2E_TIMEOUT_MS') or '') or 170000

local function now()
  return vim.loop.hrtime()
end
local function ms_since(t)
  return (now() - t) / 1e6
end
local function say(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

local finished = false
local function fail(msg)
  if finished then
    return
  end
  finished = true
  io.stderr:write('neovim e2e FAILED: ' .. msg .. '\n')
  say('e2e: 0 passed, 1 failed')
  io.stdout:flush()
  io.stderr:flush()
  vim.cmd('cquit 1')
  os.exit(1) -- not reached; cquit exits
end

-- A hard stop that needs no event-loop cooperation: runs in the timer's own (fast) callback.
local guard = vim.loop.new_timer()
guard:start(GLOBAL_MS, 0, function()
  io.stderr:write(string.format('neovim e2e FAILED: global timeout (%d ms)\n', GLOBAL_MS))
  io.stdout:write('e2e: 0 passed, 1 failed\n')
  os.exit(1)
end)

local function check(cond, msg)
  if not cond then
    fail(msg)
  end
end

-- Inputs -----------------------------------------------------------------------------------------
local bin = os.getenv('CUDARACE_BIN') or 'target/debug/cudarace'
bin = vim.fn.fnamemodify(bin, ':p')
local plugin_dir = os.getenv('CUDARACE_PLUGIN_DIR') or vim.fn.fnamemodify('editors/neovim', ':p')
local fixture = os.getenv('CUDARACE_FIXTURE') or (plugin_dir .. '/test/racy.cu')

check(vim.fn.executable(bin) == 1, string.format(
  'server binary %s not found or not executable; build it with `cargo build -p cudarace` or set CUDARACE_BIN',
  bin
))
check(vim.fn.filereadable(fixture) == 1, 'fixture ' .. fixture .. ' not found')

-- Work on a copy, so the fix is never written into the repository's fixture.
local workdir = vim.fn.tempname()
vim.fn.mkdir(workdir, 'p')
local path = workdir .. '/racy.cu'
local lines = vim.fn.readfile(fixture)
vim.fn.writefile(lines, path)

-- Expected lines (0-based), from the markers: a finding must land exactly on a marked line.
local function expected_from(text_lines)
  local want = { ['data-race'] = {}, ['barrier-divergence'] = {} }
  for i, text in ipairs(text_lines) do
    if text:match('//%s*RACE%s*$') then
      want['data-race'][i - 1] = true
    elseif text:match('//%s*DIVERGENT%s*$') then
      want['barrier-divergence'][i - 1] = true
    end
  end
  return want
end
local expected = expected_from(lines)
check(next(expected['data-race']) ~= nil, 'fixture has no // RACE line')

-- The plugin, loaded from the repository -------------------------------------------------------
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd('filetype on') -- -u NONE leaves filetype detection off; this also sources our ftdetect
local ok, cudarace = pcall(require, 'cudarace')
check(ok, 'cannot load the plugin: ' .. tostring(cudarace))
-- CUDARACE_NVIM_API forces one of the plugin's start-up paths (default: the newest available).
local api = os.getenv('CUDARACE_NVIM_API')
cudarace.setup({
  cmd = { bin, 'lsp' },
  settings = { blockDim = '256', gridChecks = true },
  api = (api ~= nil and api ~= '') and api or nil,
})

-- Open the fixture -----------------------------------------------------------------------------
local t_open = now()
vim.cmd('edit ' .. vim.fn.fnameescape(path))
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].filetype == 'cuda', 'filetype of racy.cu is "' .. vim.bo[buf].filetype .. '", not "cuda"')

local client_id
vim.wait(10000, function()
  local ids = cudarace.client_ids()
  client_id = ids[1]
  return client_id ~= nil and vim.lsp.buf_is_attached(buf, client_id)
end, 20)
check(client_id ~= nil, 'no cudarace client is running for the buffer: `' .. bin
  .. ' lsp` did not start or exited during initialization (its stderr, if any, is in the lsp.log below)')

-- Client methods take `self` from Neovim 0.11 on (client:request_sync), plain functions before.
local function call(client, method, ...)
  if vim.fn.has('nvim-0.11') == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function alive()
  local client = vim.lsp.get_client_by_id(client_id)
  return client ~= nil and not call(client, 'is_stopped')
end

--- vim.wait that gives up early, with a clear message, when the server process is gone.
local function wait_for(what, timeout, pred)
  local died = false
  local ok_ = vim.wait(timeout, function()
    if not alive() then
      died = true
      return true
    end
    return pred()
  end, 20)
  if died then
    fail('the server exited while waiting for ' .. what .. ' (its stderr is in the lsp.log shown below)')
  end
  if not ok_ then
    fail(string.format('timed out after %d ms waiting for %s', timeout, what))
  end
end

local function ours()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == 'cudarace' then
      table.insert(out, d)
    end
  end
  return out
end

local function describe(diags)
  local parts = {}
  for _, d in ipairs(diags) do
    table.insert(parts, string.format('  line %d col %d [%s] %s', d.lnum + 1, d.col + 1, tostring(d.code), d.message))
  end
  return #parts > 0 and table.concat(parts, '\n') or '  (none)'
end

local function lines_with(code)
  local set = {}
  for _, d in ipairs(ours()) do
    if d.code == code then
      set[d.lnum] = true
    end
  end
  return set
end

local function covers(code)
  local have = lines_with(code)
  for lnum in pairs(expected[code]) do
    if not have[lnum] then
      return false
    end
  end
  return true
end

-- Diagnostics -------------------------------------------------------------------------------------
wait_for('the first cudarace diagnostic', WAIT_MS, function()
  return #ours() > 0
end)
local first_ms = ms_since(t_open)

local ok_all = vim.wait(WAIT_MS, function()
  return not alive() or (covers('data-race') and covers('barrier-divergence'))
end, 20)
check(alive(), 'the server exited')
check(ok_all, 'diagnostics do not cover the marked lines; got:\n' .. describe(ours()))
local all_ms = ms_since(t_open)
local verbose = (os.getenv('CUDARACE_E2E_VERBOSE') or '') ~= ''
if verbose then
  say('diagnostics after open:\n' .. describe(ours()))
end

-- Both accesses of the race are marked: the racy read `sdata[tid + s]` and its partner
-- `sdata[tid]` (the README's "a second diagnostic marks the other access of the pair").
local function race_columns()
  local cols = {}
  for _, d in ipairs(ours()) do
    if d.code == 'data-race' then
      cols[d.lnum .. ':' .. d.col] = true
    end
  end
  return cols
end
for lnum in pairs(expected['data-race']) do
  local text = lines[lnum + 1]
  local read = text:find('sdata[tid + s]', 1, true)
  local partner = text:find('sdata[tid]', 1, true)
  if read and partner then
    local cols = race_columns()
    check(cols[lnum .. ':' .. (read - 1)] and cols[lnum .. ':' .. (partner - 1)], string.format(
      'line %d: the race should mark both `sdata[tid + s]` (col %d) and `sdata[tid]` (col %d):\n%s',
      lnum + 1, read, partner, describe(ours())
    ))
  end
end

for _, d in ipairs(ours()) do
  for code, want in pairs(expected) do
    check(d.code ~= code or want[d.lnum], string.format(
      '%s diagnostic on unmarked line %d:\n%s',
      code,
      d.lnum + 1,
      describe(ours())
    ))
  end
end

-- Hover on the racy access ------------------------------------------------------------------------
local race
for _, d in ipairs(ours()) do
  if d.code == 'data-race' then
    race = d
    break
  end
end
local position = { line = race.lnum, character = race.col } -- the fixture is ASCII: bytes = UTF-16 units
local hover = vim.lsp.buf_request_sync(buf, 'textDocument/hover', {
  textDocument = vim.lsp.util.make_text_document_params(buf),
  position = position,
}, 10000)
local hover_text = ''
for _, response in pairs(hover or {}) do
  local contents = response.result and response.result.contents
  if contents then
    hover_text = hover_text .. table.concat(vim.lsp.util.convert_input_to_markdown_lines(contents), '\n')
  end
end
check(hover_text ~= '', string.format('no hover at line %d col %d (the racy access)', race.lnum + 1, race.col + 1))
check(hover_text:lower():find('thread') ~= nil and hover_text:find('threadIdx') ~= nil, 'hover does not name the threads (no "thread" / "threadIdx"):\n' .. hover_text)
check(hover_text:find('| | thread A | thread B |', 1, true) ~= nil and hover_text:find('| cell |', 1, true) ~= nil,
  'the hover has no witness table (thread A, thread B, cell):\n' .. hover_text)
local _, said = hover_text:gsub('depends on no unknown value', '')
check(said == 1, string.format('the hover says "depends on no unknown value" %d times:\n%s', said, hover_text))

if verbose then
  say('hover:\n' .. hover_text)
end

-- The verified code action ------------------------------------------------------------------------
-- The server verifies its fix in the background, so the action may appear only after a while: ask
-- again until it does.
-- The LSP form of our diagnostics on a line, for the code action context (built by hand: the
-- helpers for it differ between Neovim versions).
local function lsp_diagnostics_on(lnum)
  local out = {}
  for _, d in ipairs(ours()) do
    if d.lnum == lnum then
      table.insert(out, {
        range = {
          start = { line = d.lnum, character = d.col },
          ['end'] = { line = d.end_lnum, character = d.end_col },
        },
        severity = d.severity,
        message = d.message,
        source = d.source,
        code = d.code,
      })
    end
  end
  return out
end

local function code_actions()
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    range = {
      start = { line = race.lnum, character = race.col },
      ['end'] = { line = race.end_lnum, character = race.end_col },
    },
    context = { diagnostics = lsp_diagnostics_on(race.lnum) },
  }
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', params, 10000)
  local actions = {}
  for _, response in pairs(responses or {}) do
    for _, action in ipairs(response.result or {}) do
      table.insert(actions, action)
    end
  end
  return actions
end

local verified, offered
local t_actions = now()
-- A plain loop, not vim.wait: the requests below wait themselves, and vim.wait must not nest.
while verified == nil do
  check(alive(), 'the server exited while waiting for the code action')
  offered = code_actions()
  for _, action in ipairs(offered) do
    if action.title:lower():find('verified') then
      verified = action
      break
    end
  end
  if verified == nil then
    local titles = {}
    for _, action in ipairs(offered) do
      table.insert(titles, action.title)
    end
    check(ms_since(t_actions) < WAIT_MS, string.format(
      'no code action titled "...verified..." at line %d within %d ms; offered: %s',
      race.lnum + 1,
      WAIT_MS,
      #titles > 0 and table.concat(titles, ' | ') or '(none)'
    ))
    vim.wait(250)
  end
end
local action_ms = ms_since(t_actions)

local client = vim.lsp.get_client_by_id(client_id)
local function count_barriers()
  local n = 0
  for _, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    for _ in text:gmatch('__sync%a+%s*%(') do
      n = n + 1
    end
  end
  return n
end
local barriers_before = count_barriers()

if verified.edit == nil and verified.command == nil and verified.data ~= nil then
  local resolved = call(client, 'request_sync', 'codeAction/resolve', verified, 10000, buf)
  check(resolved and resolved.result, 'codeAction/resolve failed: ' .. vim.inspect(resolved))
  verified = resolved.result
end
local t_fix = now()
if verified.edit then
  vim.lsp.util.apply_workspace_edit(verified.edit, client.offset_encoding)
end
local command = type(verified.command) == 'table' and verified.command
  or (type(verified.command) == 'string' and verified)
if command then
  local result = call(client, 'request_sync', 'workspace/executeCommand', {
    command = command.command,
    arguments = command.arguments,
  }, 10000, buf)
  check(result and not result.err, 'executing the code action failed: ' .. vim.inspect(result))
end
check(count_barriers() > barriers_before, 'applying "' .. verified.title .. '" inserted no barrier')

wait_for('the data-race diagnostics to clear after the fix', WAIT_MS, function()
  return next(lines_with('data-race')) == nil
end)
local clear_ms = ms_since(t_fix)

-- The inserted barrier is indented like the statement before it (the loop body's).
do
  local now_lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i, text in ipairs(now_lines) do
    if text:match('^%s*__syncthreads%(%);%s*$') and (lines[i] ~= text) then
      local indent = #text:match('^%s*')
      local above = #now_lines[i - 1]:match('^%s*')
      check(indent == above, string.format(
        'the inserted barrier (line %d) is indented by %d, the line above by %d:\n%s',
        i, indent, above, table.concat(now_lines, '\n')
      ))
      break
    end
  end
end

if verbose then
  say('buffer after the fix:\n' .. table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
  say('diagnostics after the fix:\n' .. describe(ours()))
end

-- The fix must not have added divergence, and the divergent barrier elsewhere stays reported
-- (on its marked line, which the inserted line may have moved).
expected = expected_from(vim.api.nvim_buf_get_lines(buf, 0, -1, false))
for _, d in ipairs(ours()) do
  check(d.code ~= 'barrier-divergence' or expected['barrier-divergence'][d.lnum], string.format(
    'the verified fix added barrier divergence:\n%s',
    describe(ours())
  ))
end
check(covers('barrier-divergence'), 'the divergent barrier is no longer reported after the fix:\n' .. describe(ours()))

-- A second file of the same project reuses the running server ------------------------------------
local second = workdir .. '/second.cuh'
vim.fn.writefile({ '__global__ void copy(float *a, const float *b) { a[threadIdx.x] = b[threadIdx.x]; }' }, second)
vim.cmd('edit ' .. vim.fn.fnameescape(second))
local buf2 = vim.api.nvim_get_current_buf()
check(vim.bo[buf2].filetype == 'cuda', 'filetype of second.cuh is "' .. vim.bo[buf2].filetype .. '", not "cuda"')
vim.wait(5000, function()
  return vim.lsp.buf_is_attached(buf2, client_id)
end, 20)
check(vim.lsp.buf_is_attached(buf2, client_id), 'second.cuh is not attached to the running cudarace client')
check(#cudarace.client_ids() == 1, string.format('%d cudarace clients for one project root', #cudarace.client_ids()))

--- Opens `name` (written with `text`) in the project; returns its buffer.
local function open_new(name, text)
  local file = workdir .. '/' .. name
  vim.fn.writefile(vim.split(text, '\n'), file)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local b = vim.api.nvim_get_current_buf()
  wait_for(name .. ' to attach', 5000, function()
    return vim.lsp.buf_is_attached(b, client_id)
  end)
  return b
end

local function diags_in(b, code)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(b)) do
    if d.source == 'cudarace' and d.code == code then
      table.insert(out, d)
    end
  end
  return out
end

-- Barrier divergence in a second file ------------------------------------------------------------
local t_div = now()
local div = open_new('divergent.cu', table.concat({
  '__global__ void partial_barrier(float *data) {',
  '    __shared__ float tile[256];',
  '    if (threadIdx.x < 128) {',
  '        tile[threadIdx.x] = data[threadIdx.x];',
  '        __syncthreads();',
  '    }',
  '}',
}, '\n'))
wait_for('a barrier-divergence diagnostic in divergent.cu', WAIT_MS, function()
  local found = diags_in(div, 'barrier-divergence')
  return #found > 0 and found[1].lnum == 4 and found[1].col == 8
end)
local div_ms = ms_since(t_div)

-- A setting that changes the assumed launch ----------------------------------------------------
-- Racy exactly when a block has more than 64 threads.
local launch = open_new('launch.cu', '__global__ void wrap() {\n    __shared__ int s[64];\n    s[threadIdx.x % 64] = 1;\n}')
local function launch_races()
  return #diags_in(launch, 'data-race')
end
wait_for('the race in launch.cu with blockDim 256', WAIT_MS, function()
  return launch_races() > 0
end)
local t_setting = now()
cudarace.update_settings({ blockDim = '64', gridChecks = true })
wait_for('the race in launch.cu to go with blockDim 64', WAIT_MS, function()
  return launch_races() == 0
end)
local setting_ms = ms_since(t_setting)
cudarace.update_settings({ blockDim = { 128 }, gridChecks = true })
wait_for('the race in launch.cu to come back with blockDim 128', WAIT_MS, function()
  return launch_races() > 0
end)
local wrap_race = diags_in(launch, 'data-race')[1]
local launch_hover = vim.lsp.buf_request_sync(launch, 'textDocument/hover', {
  textDocument = vim.lsp.util.make_text_document_params(launch),
  position = { line = wrap_race.lnum, character = wrap_race.col },
}, 10000)
local launch_text = ''
for _, response in pairs(launch_hover or {}) do
  local contents = response.result and response.result.contents
  if contents then
    launch_text = launch_text .. table.concat(vim.lsp.util.convert_input_to_markdown_lines(contents), '\n')
  end
end
check(launch_text:find('blockDim = (128, 1, 1)', 1, true) ~= nil,
  'the witness does not assume the blockDim setting (128):\n' .. launch_text)

-- Done ---------------------------------------------------------------------------------------------
finished = true
local v = vim.version()
say(string.format('neovim %d.%d.%d (plugin api %q), server %s', v.major, v.minor, v.patch, cudarace.api(), bin))
say(string.format('open -> first diagnostic: %.0f ms', first_ms))
say(string.format('open -> all expected diagnostics: %.0f ms', all_ms))
say(string.format('verified code action offered after: %.0f ms (%q)', action_ms, verified.title))
say(string.format('fix applied -> data-race diagnostics gone: %.0f ms', clear_ms))
say(string.format('second file open -> divergence diagnostic: %.0f ms', div_ms))
say(string.format('blockDim 256 -> 64: race gone after %.0f ms', setting_ms))
say('hover: ' .. (hover_text:gsub('\n.*', '')))
say('e2e: 1 passed, 0 failed')
guard:stop()
vim.cmd('qall!')
