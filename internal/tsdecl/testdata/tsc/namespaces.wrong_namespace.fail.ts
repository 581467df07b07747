// expect: TS2339
return await tools.github.post_message({ channel: "c", text: "t" });
