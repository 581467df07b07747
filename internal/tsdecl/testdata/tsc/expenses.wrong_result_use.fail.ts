// expect: TS2339
const members = await tools.get_team_members({ team_id: "t" });
return members.map((m) => m.email);
