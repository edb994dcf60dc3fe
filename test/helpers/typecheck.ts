import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

// Type-checks src/ with the project's tsconfig, some files replaced in memory: the tests that an
// extension point (a table) is a compile error wherever it must be handled.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const at = (p: string) => path.join(ROOT, p);

/** The diagnostics of src/ with `overrides` (absolute path → text) in place of those files. */
export function typecheck(overrides: Map<string, string>): readonly ts.Diagnostic[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    at("tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, "\n")),
    },
  )!;
  const host = ts.createCompilerHost(config.options);
  const readFile = host.readFile.bind(host);
  host.readFile = (f) => overrides.get(path.resolve(f)) ?? readFile(f);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lang, onError) => {
    const text = overrides.get(path.resolve(f));
    return text === undefined ? getSourceFile(f, lang, onError) : ts.createSourceFile(f, text, lang);
  };
  const roots = config.fileNames.filter((f) => path.resolve(f).startsWith(at("src") + path.sep));
  const program = ts.createProgram({ rootNames: roots, options: config.options, host });
  return ts.getPreEmitDiagnostics(program);
}

/** `file: message`, the file relative to the repository. */
export const describeDiagnostic = (d: ts.Diagnostic) =>
  `${d.file ? path.relative(ROOT, d.file.fileName) : "?"}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
