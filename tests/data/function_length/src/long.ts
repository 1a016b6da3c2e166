// Fixture for tools/dev/function_lengths.py: braces in strings, templates,
// regular expressions, comments and return types do not end a TypeScript
// function early.

export class Shape {
  async tooLong(x: string): Promise<{ a: string }> {
    // 66 lines
    const a = '}';
    const t = `${x + `}`}}`;
    const r = /[}]\}/.test(a);
    // }
    /* } */
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    x = x.trim();
    return { a: x + a + t + String(r) };
  }

  fits(x: number): number {
    // 60 lines
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    x += 1;
    return x;
  }
}

export const arrow = (x: number): number => {
  return x + 1;
};

export function oneLine(): () => void { return () => undefined; }
