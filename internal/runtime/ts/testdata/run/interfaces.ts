// want: {"name":"Ada","tags":["admin"],"hasEmail":false}
interface Person {
  name: string;
  email?: string;
  tags: string[];
}
type WithId<T> = T & { id: number };
interface Admin extends Person {
  level: "root" | "ops";
}
const p: WithId<Admin> = { id: 1, name: "Ada", tags: ["admin"], level: "root" };
declare const external: number;
return { name: p.name, tags: p.tags, hasEmail: p.email !== undefined };
