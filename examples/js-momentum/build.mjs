// Build app.js into a Crucible strategy component: node build.mjs [OUT] [--default-features]
// (default OUT: strategy.wasm). componentize-js embeds the StarlingMonkey JavaScript engine; the
// features the sandbox does not grant (random, stdio, clocks, http) are left out, so the
// component imports only what it uses. With --default-features, componentize-js's defaults are
// kept: the component also imports wasi:http, which the sandbox links with every request refused,
// and runs all the same.
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const defaults = args.includes('--default-features');
const out = resolve(args.find((arg) => !arg.startsWith('--')) ?? resolve(here, 'strategy.wasm'));
const { component } = await componentize({
  sourcePath: resolve(here, 'app.js'),
  witPath: resolve(here, 'wit'),
  worldName: 'strategy',
  ...(defaults ? {} : { disableFeatures: ['random', 'stdio', 'clocks', 'http', 'fetch-event'] }),
});
await writeFile(out, component);
console.log(`built ${out} (${component.length} bytes)`);
