// Build app.js into a Crucible strategy component: node build.mjs [OUT] (default strategy.wasm).
// componentize-js embeds the StarlingMonkey JavaScript engine; the features the sandbox does not
// grant (random, stdio, clocks, http) are left out, so the component imports only what it uses.
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? resolve(here, 'strategy.wasm'));
const { component } = await componentize({
  sourcePath: resolve(here, 'app.js'),
  witPath: resolve(here, 'wit'),
  worldName: 'strategy',
  disableFeatures: ['random', 'stdio', 'clocks', 'http', 'fetch-event'],
});
await writeFile(out, component);
console.log(`built ${out} (${component.length} bytes)`);
