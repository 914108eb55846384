-- cudarace for Neovim: starts `cudarace lsp` for CUDA buffers.
--
--   require('cudarace').setup({
--     cmd = { '/path/to/cudarace', 'lsp' },     -- default: $CUDARACE_SERVER_PATH, else `cudarace` on PATH
--     settings = { blockDim = '16,16', possibleSeverity = 'hint' },  -- the server's options
--     filetypes = { 'cuda' },
--   })
--
-- Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client from a FileType autocommand, one
-- client per project root), uses vim.lsp.start on 0.8+ and vim.lsp.config/vim.lsp.enable on 0.11+.
-- The settings are sent as `initializationOptions`, answered to `workspace/configuration` (section
-- "cudarace") and, after M.update_settings(), sent as `workspace/didChangeConfiguration` — always
-- the same flat object, as the VS Code extension sends it.

local M = {}

local NAME = 'cudarace'
local ENV_VAR = 'CUDARACE_SERVER_PATH'
local ROOT_MARKERS = { 'compile_commands.json', 'CMakeLists.txt', 'Makefile', '.git' }

local defaults = {
  cmd = nil, -- resolved in resolve_cmd()
  settings = {},
  filetypes = { 'cuda' },
  root_markers = ROOT_MARKERS,
  on_attach = nil, -- function(client, bufnr), e.g. to map keys
  capabilities = nil,
  -- Which Neovim API starts the server: nil picks the newest the running Neovim has ('config' on
  -- 0.11+, 'start' on 0.8+, else 'start_client'); set it to force an older one.
  api = nil,
}

M.config = nil -- the merged setup() options
local clients = {} -- root dir -> client id (the 0.7 path)
local augroup = nil

local function notify(msg, level)
  vim.notify('cudarace: ' .. msg, level or vim.log.levels.ERROR)
end

--- Parses a launch dimension: a list of 1-3 positive integers, a number, or a string such as
--- "256", "16,16", "16x16" or "8 8 4". Returns {x, y, z} (missing dimensions are 1), or nil and why.
function M.parse_dim(value)
  local parts = {}
  if type(value) == 'number' then
    parts = { value }
  elseif type(value) == 'string' then
    local s = value:gsub('^%s*%[', ''):gsub('%]%s*$', '')
    for part in s:gmatch('[^,x%s]+') do
      table.insert(parts, tonumber(part) or part)
    end
  elseif type(value) == 'table' then
    parts = value
  else
    return nil, 'must be a list like {16, 16} or a string like "16,16"'
  end
  if #parts < 1 or #parts > 3 then
    return nil, 'must have 1 to 3 dimensions'
  end
  local dims = {}
  for _, n in ipairs(parts) do
    if type(n) ~= 'number' or n < 1 or n % 1 ~= 0 then
      return nil, 'must hold positive integers'
    end
    table.insert(dims, n)
  end
  while #dims < 3 do
    table.insert(dims, 1)
  end
  return dims
end

--- The server's options from the user's settings: dimensions normalized to {x, y, z}, everything
--- else passed through (the server validates it). Never an empty Lua table: that would be sent as
--- a JSON array, and the server expects an object.
function M.server_options(settings)
  local opts = {}
  for key, value in pairs(settings or {}) do
    if key == 'blockDim' or key == 'gridDim' then
      if value ~= nil and value ~= vim.NIL and value ~= '' then
        local dims, why = M.parse_dim(value)
        if dims then
          opts[key] = dims
        else
          notify(string.format('settings.%s %s; ignored', key, why), vim.log.levels.WARN)
        end
      end
    else
      opts[key] = value
    end
  end
  if next(opts) == nil then
    return vim.empty_dict()
  end
  return opts
end

local function is_executable(path)
  return path ~= nil and path ~= '' and vim.fn.executable(path) == 1
end

--- The server command: setup's `cmd`, else $CUDARACE_SERVER_PATH, else `cudarace` on PATH.
--- Returns the command list, or nil and a message saying how to fix it.
function M.resolve_cmd(cmd)
  if type(cmd) == 'string' then
    cmd = { cmd, 'lsp' }
  end
  if type(cmd) == 'table' then
    if is_executable(cmd[1]) then
      return cmd
    end
    return nil, string.format('setup({ cmd = ... }) names %q, which is not an executable file', tostring(cmd[1]))
  end
  local env = vim.env[ENV_VAR]
  if env ~= nil and env ~= '' then
    if is_executable(env) then
      return { env, 'lsp' }
    end
    return nil, string.format('$%s is %q, which is not an executable file', ENV_VAR, env)
  end
  if is_executable(NAME) then
    return { NAME, 'lsp' }
  end
  return nil,
    'no `cudarace` binary found. Install it (`cargo install --path server/crates/cudarace` in the '
      .. 'cudarace repository puts it on PATH), or set $'
      .. ENV_VAR
      .. ', or pass setup({ cmd = { "/path/to/cudarace", "lsp" } })'
end

--- The project root of a file: the nearest folder upwards holding one of the markers, else the
--- file's own folder. (vim.fs.find does not exist on 0.7.)
function M.find_root(path, markers)
  local dir = vim.fn.fnamemodify(path, ':p:h')
  local current = dir
  while current and current ~= '' do
    for _, marker in ipairs(markers or ROOT_MARKERS) do
      if vim.loop.fs_stat(current .. '/' .. marker) then
        return current
      end
    end
    local parent = vim.fn.fnamemodify(current, ':h')
    if parent == current then
      break
    end
    current = parent
  end
  return dir
end

local function configuration_handler(_, params)
  local response = {}
  for i, item in ipairs(params.items or {}) do
    if item.section == nil or item.section == '' or item.section == NAME then
      response[i] = M.server_options(M.config.settings)
    else
      response[i] = vim.NIL
    end
  end
  return response
end

local function client_config(cmd, root)
  local cfg = M.config
  return {
    name = NAME,
    cmd = cmd,
    root_dir = root,
    init_options = M.server_options(cfg.settings),
    settings = M.server_options(cfg.settings),
    handlers = { ['workspace/configuration'] = configuration_handler },
    capabilities = cfg.capabilities,
    on_attach = cfg.on_attach,
    on_exit = function(code, signal, client_id)
      -- The next CUDA buffer of this root starts a new server.
      if root ~= nil and clients[root] == client_id then
        clients[root] = nil
      end
      if code ~= 0 then
        vim.schedule(function()
          notify(string.format('server exited with code %d (signal %d); :CudaraceRestart restarts it', code, signal or 0))
        end)
      end
    end,
  }
end

local warned_missing = false

--- The API in use: setup's `api`, else the newest this Neovim has.
function M.api()
  local forced = M.config and M.config.api
  if forced ~= nil then
    return forced
  end
  if vim.fn.has('nvim-0.11') == 1 and vim.lsp.config ~= nil and vim.lsp.enable ~= nil then
    return 'config'
  elseif vim.lsp.start ~= nil then
    return 'start'
  end
  return 'start_client'
end

--- Starts (or reuses) the client for the buffer's root and attaches the buffer.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local cmd, err = M.resolve_cmd(M.config.cmd)
  if not cmd then
    if not warned_missing then
      warned_missing = true
      notify(err)
    end
    return nil
  end
  local file = vim.api.nvim_buf_get_name(bufnr)
  local root = M.find_root(file ~= '' and file or vim.fn.getcwd() .. '/x', M.config.root_markers)

  if M.api() ~= 'start_client' then
    -- 0.8+: vim.lsp.start reuses a running client with the same name and root_dir.
    return vim.lsp.start(client_config(cmd, root), { bufnr = bufnr })
  end

  local id = clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(client_config(cmd, root))
    if id == nil then
      notify('could not start ' .. table.concat(cmd, ' '))
      return nil
    end
    clients[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- Ids of the running cudarace clients.
function M.client_ids()
  local ids = {}
  -- get_active_clients is deprecated from 0.10 on, in favour of get_clients.
  local all = vim.lsp.get_clients ~= nil and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  for _, client in ipairs(all) do
    if client.name == NAME then
      table.insert(ids, client.id)
    end
  end
  return ids
end

--- Replaces the settings and sends them to every running server.
function M.update_settings(settings)
  M.config.settings = settings or {}
  local opts = M.server_options(M.config.settings)
  for _, id in ipairs(M.client_ids()) do
    local client = vim.lsp.get_client_by_id(id)
    if client then
      client.config.settings = opts
      local params = { settings = opts }
      if vim.fn.has('nvim-0.11') == 1 then
        client:notify('workspace/didChangeConfiguration', params) -- methods take `self` from 0.11 on
      else
        client.notify('workspace/didChangeConfiguration', params)
      end
    end
  end
end

--- Stops the servers and attaches every CUDA buffer again (after a rebuild of the server, say).
function M.restart()
  local ids = M.client_ids()
  for _, id in ipairs(ids) do
    vim.lsp.stop_client(id)
  end
  clients = {}
  warned_missing = false
  vim.wait(5000, function()
    for _, id in ipairs(ids) do
      if vim.lsp.get_client_by_id(id) ~= nil then
        return false
      end
    end
    return true
  end, 50)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
end

function M.setup(opts)
  M.config = vim.tbl_extend('force', vim.deepcopy(defaults), opts or {})
  local api = M.config.api
  if api ~= nil and not vim.tbl_contains({ 'config', 'start', 'start_client' }, api) then
    notify(string.format("setup({ api = %q }): use 'config', 'start' or 'start_client'", tostring(api)))
    M.config.api = nil
  end

  vim.api.nvim_create_user_command('CudaraceRestart', function()
    M.restart()
  end, { desc = 'Restart the cudarace language server' })

  if M.api() == 'config' then
    -- 0.11+: the built-in configuration framework does the FileType autocommand and root finding.
    local cmd, err = M.resolve_cmd(M.config.cmd)
    if not cmd then
      notify(err)
      return
    end
    local cfg = client_config(cmd, nil)
    cfg.root_dir = nil
    cfg.root_markers = M.config.root_markers
    cfg.filetypes = M.config.filetypes
    vim.lsp.config(NAME, cfg)
    vim.lsp.enable(NAME)
    return
  end

  augroup = vim.api.nvim_create_augroup('cudarace', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = augroup,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
    desc = 'Start or attach the cudarace language server',
  })
  -- Buffers that already have their filetype (setup() called late) are attached now.
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
end

return M
