// What both Node.js servers of tests/real/ share: their command line, the line they print once
// listening, and their end. They live in this folder, not beside the Python one, because Node
// finds `import`ed packages only in a node_modules folder at or above the importing file.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** The command line's `--name value` options, each one required. */
export function options(names) {
  const spec = Object.fromEntries(names.map((name) => [name, { type: 'string' }]));
  const { values } = parseArgs({ options: spec, strict: true });
  for (const name of names) {
    if (values[name] === undefined) {
      console.error(`missing --${name}`);
      process.exit(2);
    }
  }
  return values;
}

/** A whole number of at least 1 from an option, or exit 2 naming it. */
export function positive(values, name) {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a whole number of at least 1, not ${values[name]}`);
    process.exit(2);
  }
  return n;
}

/** The installed version of each package, read from its own package.json. */
function versions(packages) {
  return Object.fromEntries(
    packages.map((name) => {
      const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
      return [name, JSON.parse(readFileSync(url, 'utf8')).version];
    }),
  );
}

/**
 * Say on stdout that the server listens (the port and the versions under test, nothing else),
 * then exit when stdin closes (the test that started us is gone) or on SIGTERM.
 */
export function announce(port, packages) {
  console.log(JSON.stringify({ port, versions: { node: process.versions.node, ...versions(packages) } }));
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
  process.on('SIGTERM', () => process.exit(0));
}
