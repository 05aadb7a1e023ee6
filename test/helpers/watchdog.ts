// Loaded before every test file (`--import` in the test script). The runner bounds each test by
// its timeout, but not a file: a clean-up step that never ends (a server's close waiting on a
// connection, a browser that does not quit) keeps the file's process, and the whole run, waiting
// with nothing reported. Past FLEET_TEST_FILE_TIMEOUT_SECONDS (default 300; the longest file takes
// about 90 s) the file's process says what it still holds and exits with a failure.
const context = process.env.NODE_TEST_CONTEXT;
const seconds = Number(process.env.FLEET_TEST_FILE_TIMEOUT_SECONDS ?? 300);

if (context !== undefined && context.startsWith('child') && Number.isFinite(seconds) && seconds > 0) {
  const file = process.argv[1] ?? 'a test file';
  const timer = setTimeout(() => {
    const holding = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    process.stderr.write(`\n${file}: still running after ${seconds} s (FLEET_TEST_FILE_TIMEOUT_SECONDS); `
      + `it holds ${holding.join(', ') || 'nothing'}. Ending it as failed.\n`);
    process.exit(1);
  }, seconds * 1000);
  timer.unref();
}
