// Reads a JSON array of YAML texts on stdin; prints a JSON array of what the `yaml` package
// (YAML 1.2, core schema: what editors use) makes of each: {value} or {error}. Numbers that
// JSON cannot carry come back as {"$float": "nan" | "inf" | "-inf"}.
const YAML = require("yaml");
let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  const answers = texts.map((text) => {
    try {
      return { value: YAML.parse(text, { version: "1.2", schema: "core", uniqueKeys: true }) };
    } catch (error) {
      return { error: String(error.message).split("\n")[0] };
    }
  });
  const replacer = (_key, value) => {
    if (typeof value === "number" && !Number.isFinite(value)) {
      return { $float: Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf" };
    }
    return value;
  };
  process.stdout.write(JSON.stringify(answers, replacer));
});
