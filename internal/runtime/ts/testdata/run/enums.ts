// want: {"green":1,"name":"Green","dir":"UP","flag":4}
enum Color { Red, Green, Blue }
enum Direction { Up = "UP", Down = "DOWN" }
const enum Flag { A = 1 << 0, B = 1 << 1, C = 1 << 2 }
return { green: Color.Green, name: Color[Color.Green], dir: Direction.Up, flag: Flag.C };
