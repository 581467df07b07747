// want: {"area":12,"name":"rect","count":2,"secret":42,"shapes":["rect 3x4","square 2x2"],"isShape":true}
abstract class Shape {
  static count = 0;
  #secret = 42;
  protected abstract kind: string;
  constructor(protected readonly w: number, protected readonly h: number) {
    Shape.count++;
  }
  get area(): number {
    return this.w * this.h;
  }
  reveal(): number {
    return this.#secret;
  }
  toString(): string {
    return `${this.kind} ${this.w}x${this.h}`;
  }
}
class Rect extends Shape {
  protected kind = "rect";
  name(): string {
    return this.kind;
  }
}
class Square extends Shape {
  protected override kind = "square";
  constructor(side: number) {
    super(side, side);
  }
}
const r = new Rect(3, 4);
const s = new Square(2);
return {
  area: r.area,
  name: r.name(),
  count: Shape.count,
  secret: r.reveal(),
  shapes: [r, s].map((x) => x.toString()),
  isShape: s instanceof Shape,
};
