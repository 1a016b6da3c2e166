-- Fixture for tools/dev/function_lengths.py: "end" in strings, long
-- strings and comments does not end a Lua function early; if, for ... do
-- and repeat ... until blocks inside it do not either.

local M = {}

function M.too_long(x)
  -- 68 lines
  local a = "end"
  local b = [[
end ]]
  --[[ end
  ]]
  if x then
    for i = 1, 2 do
      x = x + i
    end
  end
  repeat x = x - 1 until x < 0
  local f = function() return x end
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  return f() .. a .. b
end

local function fits(x)
  -- 60 lines
  while x > 0 do x = x - 1 end
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  x = x + 1
  return x
end

local one_line = function() return 1 end

return M, fits, one_line
