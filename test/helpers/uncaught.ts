// Imported by test/helpers/app.ts, so by every file that runs an in-process Vigil: an uncaught
// exception fails the file, whichever test it happens under. node:test attributes one to the test
// whose async context created the failing resource; when that is a suite still running (a test
// app's pooled connection, say), Node 20 marks nothing failed, and a crash the service would suffer
// in production passed silently. It is printed with its stack, and the file's process exits 1 (set
// on "exit", after node:test has set its own exit code from the results).

let uncaught = 0;
process.on("uncaughtException", (err) => {
  uncaught++;
  process.stderr.write(
    `\nUNCAUGHT EXCEPTION in ${process.argv[1] ?? "the test process"}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
});
process.on("exit", () => {
  if (uncaught) {
    process.stderr.write(`${uncaught} uncaught exception(s): this file fails\n`);
    process.exitCode = 1;
  }
});
