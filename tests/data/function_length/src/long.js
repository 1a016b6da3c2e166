// Fixture for tools/function_lengths.py: braces in strings, templates, regular
// expressions and comments do not end a function early.

function tooLong(x) {
  // 62 lines
  const a = "}";
  const b = '}}';
  const c = `${x + `}`}}`;
  const d = /[}]\}/.test(a);
  // }
  /* } */
  const e = x / 2 / 1;



















































  return x;
}

function fits(x) {
  // 60 lines
























































  return x;
}

const arrow = (x) => {
  // 63 lines



























































  return x;
};

const oneLine = (x) => ({ x });
const notAFunction = { a: 1 };
