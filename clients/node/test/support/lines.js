'use strict';
// A line-protocol process (the Node driver or the C++ `pathlock shell`):
// send a line, read the next JSON answer.
const { spawn } = require('node:child_process');

function lineProcess(cmd, args, env = process.env) {
  const proc = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const answers = [];
  const readers = [];
  let buf = '';
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  proc.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const obj = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (readers.length) readers.shift()(obj);
      else answers.push(obj);
    }
  });
  const next = () =>
    answers.length
      ? Promise.resolve(answers.shift())
      : new Promise((resolve, reject) => {
          const onExit = (code) => reject(new Error(`${cmd} exited (${code}): ${stderr}`));
          proc.once('exit', onExit);
          readers.push((obj) => {
            proc.removeListener('exit', onExit); // a test polling through ask() adds no listener per line
            resolve(obj);
          });
        });
  return {
    proc,
    send(line) {
      proc.stdin.write(line + '\n');
    },
    next,
    async ask(line) {
      this.send(line);
      return next();
    },
    async end() {
      proc.stdin.end();
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      return proc.exitCode;
    },
  };
}

module.exports = { lineProcess };
