// Lists the functions of the given TypeScript files that are longer than a limit (default 60 lines),
// as `file:line length name`. The layout keeps every function under it (docs/architecture.md).
//
//   node scripts/function-lengths.mjs $(find src -name '*.ts') [--max 60]
import fs from "node:fs";
import ts from "typescript";

const args = process.argv.slice(2);
const at = args.indexOf("--max");
const max = at < 0 ? 60 : Number(args.splice(at, 2)[1]);
let found = 0;
for (const file of args) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > max) {
        found++;
        console.log(`${file}:${first + 1} ${last - first + 1} ${node.name?.getText() ?? "(anonymous)"}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
if (found === 0) console.log(`no function over ${max} lines in ${args.length} files`);
