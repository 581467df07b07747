// want: {"log":["open","use","close"]}
const log: string[] = [];
function resource(): Disposable {
  log.push("open");
  return { [Symbol.dispose]: () => { log.push("close"); } };
}
{
  using r = resource();
  log.push("use");
}
return { log };
