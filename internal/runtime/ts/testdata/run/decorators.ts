// want: {"calls":["run"],"result":3}
const calls: string[] = [];
function logged(target: (...args: any[]) => any, ctx: ClassMethodDecoratorContext) {
  return function (this: unknown, ...args: any[]) {
    calls.push(String(ctx.name));
    return target.apply(this, args);
  };
}
class Job {
  @logged
  run(a: number, b: number): number {
    return a + b;
  }
}
return { calls, result: new Job().run(1, 2) };
