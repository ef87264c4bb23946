// Conformance of Crucible's simnet with the real Solana JavaScript clients
// (@solana/web3.js 1.x and @solana/spl-token), over JSON-RPC and the PubSub websocket.
//
//   SIMNET_URL=http://127.0.0.1:8080/simnet/rpc node conformance.mjs
//
// Every step prints `ok - <name>`, `not ok - <name>: <why>` or `skip - <name> (needs …)`, and
// the run ends with `N passed, N failed, N skipped`; the exit code is 1 if any step failed. A
// failed step does not stop the run: later steps only skip when the ledger state they build on
// (a funded payer, a stablecoin balance…) is missing.

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import {
  ComputeBudgetProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SendTransactionError,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
  sendAndConfirmTransaction,
} from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccount,
  createAssociatedTokenAccountInstruction,
  createTransferCheckedInstruction,
  getAccount,
  getAssociatedTokenAddressSync,
  getMint,
} from '@solana/spl-token';

const SIMNET_URL = process.env.SIMNET_URL;
if (!SIMNET_URL) {
  console.error('SIMNET_URL is not set (e.g. http://127.0.0.1:8080/simnet/rpc)');
  process.exit(2);
}
// web3.js would guess the websocket at port+1; the simnet serves PubSub on the same path.
const WS_URL = SIMNET_URL.replace(/^http/, 'ws');
// SIMNET_TRACE=1 prints every JSON-RPC request and answer (to stderr), to see what a failing
// step sent and got.
const trace = process.env.SIMNET_TRACE === '1';
async function tracingFetch(url, init) {
  const response = await fetch(url, init);
  const text = await response.clone().text();
  console.error(`> ${init.body}\n< ${response.status} ${text.slice(0, 2000)}`);
  return response;
}
const connection = new Connection(SIMNET_URL, {
  commitment: 'confirmed',
  wsEndpoint: WS_URL,
  ...(trace ? { fetch: tracingFetch } : {}),
});

const STEP_TIMEOUT_MS = 20_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const FEE_PER_SIGNATURE = 5000;
const RENT_EXEMPT_ZERO = 890_880; // getMinimumBalanceForRentExemption(0) on every Solana cluster
const STABLE_DECIMALS = 6;
const MEMO_PROGRAM_ID = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
// The simnet's stablecoin mint: a fixed address, sha256 of this phrase.
const MINT = new PublicKey(
  new Uint8Array(createHash('sha256').update('crucible simnet stablecoin mint').digest()),
);

// web3.js logs every failed websocket (re)connect and every failed subscribe, again and again:
// keep the first of each message and count the rest, so a broken PubSub endpoint does not
// drown the report.
const wsErrors = new Map();
const consoleError = console.error.bind(console);
console.error = (...args) => {
  let message;
  if (args[0] === 'ws error:') {
    message = `websocket error: ${args[1]}`;
  } else if (typeof args[0] === 'string' && args[0].startsWith('Received ') && args[1]?.error) {
    const { error } = args[1];
    message = `${args[0]}: ${error.message ?? JSON.stringify(error)}`;
  } else {
    consoleError(...args);
    return;
  }
  const seen = wsErrors.get(message) ?? 0;
  wsErrors.set(message, seen + 1);
  if (seen === 0) consoleError(`# web3.js: ${message}`);
};

// web3.js 1.x retries a failed subscribe at once, in a loop of microtasks: when a server drops
// the socket without a close handshake, the socket sits in CLOSING, every retry fails at once,
// and the loop starves the event loop (no timeout can fire) until the heap runs out. Hold such
// a call back one timer tick so the close event lands and web3.js reconnects. On an OPEN socket
// (a healthy server) calls go through untouched.
const rpcWebSocket = connection._rpcWebSocket;
const rpcCall = rpcWebSocket.call.bind(rpcWebSocket);
rpcWebSocket.call = (...args) =>
  rpcWebSocket.underlyingSocket?.readyState === 1 ? rpcCall(...args) : sleep(100).then(() => rpcCall(...args));

// ---------------------------------------------------------------------------------------------
// Step runner

const counts = { passed: 0, failed: 0, skipped: 0 };
const failures = [];
// Ledger state the steps build on; a step names what it needs and skips without it.
const ctx = {};

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function step(name, needs, fn) {
  const missing = needs.filter((key) => !ctx[key]);
  if (missing.length) {
    counts.skipped += 1;
    console.log(`skip - ${name} (needs ${missing.join(', ')})`);
    return;
  }
  try {
    await withTimeout(fn(), STEP_TIMEOUT_MS, name);
    counts.passed += 1;
    console.log(`ok - ${name}`);
  } catch (error) {
    counts.failed += 1;
    failures.push(name);
    console.log(`not ok - ${name}: ${describe(error)}`);
  }
}

function describe(error) {
  if (error instanceof SendTransactionError) {
    return `SendTransactionError: ${error.transactionMessage} (logs: ${JSON.stringify(error.logs)})`;
  }
  const text = error?.message ?? JSON.stringify(error);
  // web3.js folds JSON-RPC errors into the message; superstruct shape errors carry the path.
  return text.replace(/\s+/g, ' ').slice(0, 600);
}

// ---------------------------------------------------------------------------------------------
// Helpers

// Plain JSON-RPC over fetch, for what web3.js has no method for (the simnet's airdrop extension,
// getIdentity).
let rawId = 0;
async function rawRpc(method, params) {
  const response = await fetch(SIMNET_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rawId, method, params }),
  });
  const body = await response.json();
  if (body.error) throw new Error(`${method} → error ${body.error.code}: ${body.error.message}`);
  return body.result;
}

// Set by step a: whether confirmTransaction (signatureSubscribe over the websocket) works. When
// it does not, later steps confirm by polling getSignatureStatuses over HTTP, so each HTTP method
// is still checked on its own; the websocket steps report the PubSub failure.
let websocketConfirms = false;

const RANK = { processed: 0, confirmed: 1, finalized: 2 };
async function pollConfirmed(signature, commitment = 'confirmed') {
  for (;;) {
    const { value } = await connection.getSignatureStatuses([signature]);
    const status = value[0];
    if (status?.err) throw new Error(`transaction ${signature} failed: ${JSON.stringify(status.err)}`);
    if (status && RANK[status.confirmationStatus] >= RANK[commitment]) return status;
    await sleep(250);
  }
}

async function confirm(signature, commitment = 'confirmed') {
  if (!websocketConfirms) return pollConfirmed(signature, commitment);
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const { value } = await connection.confirmTransaction(
    { signature, blockhash, lastValidBlockHeight },
    commitment,
  );
  assert.equal(value.err, null, `transaction ${signature} failed`);
}

// sendAndConfirmTransaction when the websocket confirms, else send and poll.
async function land(transaction, signers) {
  if (websocketConfirms) {
    return sendAndConfirmTransaction(connection, transaction, signers, { commitment: 'confirmed' });
  }
  const signature = await connection.sendTransaction(transaction, signers);
  await pollConfirmed(signature);
  return signature;
}

function transfer(from, to, lamports) {
  return new Transaction().add(SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports }));
}

// A signed transaction built here (not by sendTransaction), so its signature is known before it
// is sent and a subscription can be opened first.
async function signedTransfer(from, to, lamports) {
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const transaction = transfer(from.publicKey, to, lamports);
  transaction.recentBlockhash = blockhash;
  transaction.feePayer = from.publicKey;
  transaction.sign(from);
  return { transaction, signature: base58(transaction.signature), blockhash, lastValidBlockHeight };
}

// Resolves once web3.js reports the server acknowledged the subscribe request. This uses
// web3.js's internal hook (the same one confirmTransaction waits on): without it a notification
// could be missed, or a server that never answers would only show up as a silent timeout.
function subscribed(clientSubscriptionId, method) {
  return withTimeout(
    new Promise((resolve) => {
      const dispose = connection._onSubscriptionStateChange(clientSubscriptionId, (state) => {
        if (state === 'subscribed') {
          dispose();
          resolve();
        }
      });
    }),
    10_000,
    `the server never acknowledged ${method} on ${WS_URL}`,
  );
}

// Minimal base58 (Bitcoin alphabet), for signatures computed locally.
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58(bytes) {
  let n = BigInt('0x' + (Buffer.from(bytes).toString('hex') || '0'));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    out = '1' + out;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Steps

const payer = Keypair.generate();
const recipient = Keypair.generate();

await step('a. requestAirdrop 2 SOL, confirmTransaction over the websocket, getBalance', [], async () => {
  const signature = await connection.requestAirdrop(payer.publicKey, 2 * LAMPORTS_PER_SOL);
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  try {
    const { value } = await withTimeout(
      connection.confirmTransaction({ signature, blockhash, lastValidBlockHeight }, 'confirmed'),
      10_000,
      'confirmTransaction (signatureSubscribe on the websocket, then getSignatureStatuses)',
    );
    assert.equal(value.err, null);
    websocketConfirms = true;
  } finally {
    // The airdrop has landed either way: let the later steps build on it.
    await pollConfirmed(signature);
    ctx.funded = true;
  }
  assert.equal(await connection.getBalance(payer.publicKey), 2 * LAMPORTS_PER_SOL);
});

await step('b. getMinimumBalanceForRentExemption(0) == 890880', [], async () => {
  assert.equal(await connection.getMinimumBalanceForRentExemption(0), RENT_EXEMPT_ZERO);
});

await step('b. SOL transfer with sendAndConfirmTransaction, balances and 5000-lamport fee', ['funded'], async () => {
  const before = await connection.getBalance(payer.publicKey);
  const amount = RENT_EXEMPT_ZERO + 100_000;
  await land(transfer(payer.publicKey, recipient.publicKey, amount), [payer]);
  ctx.recipientFunded = true;
  assert.equal(await connection.getBalance(recipient.publicKey), amount, 'recipient balance');
  assert.equal(
    await connection.getBalance(payer.publicKey),
    before - amount - FEE_PER_SIGNATURE,
    'payer balance = before - amount - 5000 fee',
  );
});

const payerAta = getAssociatedTokenAddressSync(MINT, payer.publicKey);
const recipientAta = getAssociatedTokenAddressSync(MINT, recipient.publicKey);

await step('c. requestAirdrop with {stablecoinAmount} (raw JSON-RPC), confirmed', ['funded'], async () => {
  const signature = await rawRpc('requestAirdrop', [
    payer.publicKey.toBase58(),
    LAMPORTS_PER_SOL,
    { stablecoinAmount: 50_000_000 },
  ]);
  assert.equal(typeof signature, 'string');
  await confirm(signature);
  ctx.stable = true;
});

await step('d. spl-token getMint (base64 Mint layout): decimals 6, supply > 0, initialized', ['stable'], async () => {
  const mint = await getMint(connection, MINT);
  assert.equal(mint.decimals, STABLE_DECIMALS);
  assert.equal(typeof mint.supply, 'bigint');
  assert.ok(mint.supply > 0n, `supply ${mint.supply}`);
  assert.equal(mint.isInitialized, true);
});

await step('d. spl-token getAccount (base64 Account layout) of the payer ATA', ['stable'], async () => {
  const account = await getAccount(connection, payerAta);
  assert.equal(account.amount, 50_000_000n);
  assert.ok(account.owner.equals(payer.publicKey), `owner ${account.owner.toBase58()}`);
  assert.ok(account.mint.equals(MINT), `mint ${account.mint.toBase58()}`);
  assert.equal(account.isInitialized, true);
});

await step('d. getParsedAccountInfo (jsonParsed) of the mint and the ATA', ['stable'], async () => {
  const { value: mint } = await connection.getParsedAccountInfo(MINT);
  assert.ok(mint, 'mint account exists');
  assert.ok(mint.owner.equals(TOKEN_PROGRAM_ID), `mint owner ${mint.owner.toBase58()}`);
  assert.equal(mint.data.parsed.type, 'mint');
  assert.equal(mint.data.parsed.info.decimals, STABLE_DECIMALS);
  assert.ok(BigInt(mint.data.parsed.info.supply) > 0n, 'parsed supply is a positive string');
  const { value: ata } = await connection.getParsedAccountInfo(payerAta);
  assert.equal(ata.data.parsed.type, 'account');
  assert.equal(ata.data.parsed.info.tokenAmount.amount, '50000000');
});

await step('d. getTokenSupply of the mint', ['stable'], async () => {
  const { value } = await connection.getTokenSupply(MINT);
  assert.equal(value.decimals, STABLE_DECIMALS);
  assert.ok(BigInt(value.amount) >= 50_000_000n, `amount ${value.amount}`);
  assert.equal(typeof value.uiAmountString, 'string');
});

await step('d. getMultipleAccountsInfo [mint, ATA, missing] (base64)', ['stable'], async () => {
  const missing = Keypair.generate().publicKey;
  const [mint, ata, none] = await connection.getMultipleAccountsInfo([MINT, payerAta, missing]);
  assert.equal(mint?.data.length, 82, 'mint data is the 82-byte Mint layout');
  assert.equal(ata?.data.length, 165, 'token account data is the 165-byte Account layout');
  assert.ok(ata.owner.equals(TOKEN_PROGRAM_ID));
  assert.equal(none, null);
});

await step('e. createAssociatedTokenAccount for the recipient, paid by the payer', ['funded'], async () => {
  if (websocketConfirms) {
    // spl-token's own action: builds the instruction and calls sendAndConfirmTransaction.
    const created = await createAssociatedTokenAccount(connection, payer, MINT, recipient.publicKey);
    assert.ok(created.equals(recipientAta));
  } else {
    const instruction = createAssociatedTokenAccountInstruction(
      payer.publicKey, recipientAta, recipient.publicKey, MINT,
    );
    await land(new Transaction().add(instruction), [payer]);
  }
  ctx.recipientAta = true;
  const account = await getAccount(connection, recipientAta);
  assert.equal(account.amount, 0n);
  assert.ok(account.owner.equals(recipient.publicKey));
});

const MEMO = `crucible conformance ${randomBytes(4).toString('hex')}`;

await step('f. transferChecked 1.5 units + Memo v2 in one transaction', ['stable', 'recipientAta'], async () => {
  const transaction = new Transaction().add(
    createTransferCheckedInstruction(payerAta, MINT, recipientAta, payer.publicKey, 1_500_000n, STABLE_DECIMALS),
    new TransactionInstruction({
      programId: MEMO_PROGRAM_ID,
      keys: [{ pubkey: payer.publicKey, isSigner: true, isWritable: false }],
      data: Buffer.from(MEMO, 'utf8'),
    }),
  );
  ctx.memoSignature = await land(transaction, [payer]);
});

await step('f. getTokenAccountBalance of both ATAs', ['memoSignature'], async () => {
  const { value: from } = await connection.getTokenAccountBalance(payerAta);
  assert.deepEqual(
    { amount: from.amount, decimals: from.decimals, uiAmount: from.uiAmount, uiAmountString: from.uiAmountString },
    { amount: '48500000', decimals: 6, uiAmount: 48.5, uiAmountString: '48.5' },
  );
  const { value: to } = await connection.getTokenAccountBalance(recipientAta);
  assert.deepEqual(
    { amount: to.amount, decimals: to.decimals, uiAmount: to.uiAmount, uiAmountString: to.uiAmountString },
    { amount: '1500000', decimals: 6, uiAmount: 1.5, uiAmountString: '1.5' },
  );
});

await step('f. getParsedTransaction shows the memo', ['memoSignature'], async () => {
  const parsed = await connection.getParsedTransaction(ctx.memoSignature, {
    maxSupportedTransactionVersion: 0,
    commitment: 'confirmed',
  });
  assert.ok(parsed, 'transaction found');
  assert.equal(parsed.meta.err, null);
  assert.equal(parsed.meta.fee, FEE_PER_SIGNATURE);
  const inLogs = (parsed.meta.logMessages ?? []).some((line) => line.includes(MEMO));
  const inInstructions = parsed.transaction.message.instructions.some(
    (ix) => ix.programId.equals(MEMO_PROGRAM_ID) && ix.parsed === MEMO,
  );
  assert.ok(inLogs || inInstructions, `memo in neither logMessages nor parsed instructions:
    ${JSON.stringify({ logs: parsed.meta.logMessages, instructions: parsed.transaction.message.instructions })}`);
});

await step('g. getSignaturesForAddress newest first, `before` paging', ['funded'], async () => {
  const first = await connection.getSignaturesForAddress(payer.publicKey, { limit: 2 });
  assert.equal(first.length, 2);
  if (ctx.memoSignature) assert.equal(first[0].signature, ctx.memoSignature, 'newest first');
  assert.ok(first[0].slot >= first[1].slot, 'slots descend');
  assert.equal(first[0].confirmationStatus !== undefined, true, 'confirmationStatus present');
  const next = await connection.getSignaturesForAddress(payer.publicKey, {
    limit: 2,
    before: first[1].signature,
  });
  assert.ok(next.length >= 1, 'an older page exists');
  const firstPage = new Set(first.map((entry) => entry.signature));
  assert.ok(next.every((entry) => !firstPage.has(entry.signature)), 'pages do not overlap');
  assert.ok(next[0].slot <= first[1].slot, 'the next page is older');
});

// A transfer of more lamports than the payer holds: fails in the System program.
async function overdraft() {
  const balance = await connection.getBalance(payer.publicKey);
  const { blockhash } = await connection.getLatestBlockhash();
  const message = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash,
    instructions: [
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: recipient.publicKey, lamports: balance + LAMPORTS_PER_SOL }),
    ],
  }).compileToLegacyMessage();
  const transaction = new VersionedTransaction(message);
  transaction.sign([payer]);
  return transaction;
}

await step('h. simulateTransaction of an overdrawing SOL transfer: err and logs', ['funded'], async () => {
  const { value } = await connection.simulateTransaction(await overdraft(), { sigVerify: true });
  assert.notEqual(value.err, null, 'value.err is set');
  assert.ok(Array.isArray(value.logs) && value.logs.length > 0, `value.logs ${JSON.stringify(value.logs)}`);
});

await step('h. simulateTransaction of an overdrawing token transferChecked: err and logs', ['stable', 'recipientAta'], async () => {
  const { blockhash } = await connection.getLatestBlockhash();
  const message = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash,
    instructions: [
      createTransferCheckedInstruction(payerAta, MINT, recipientAta, payer.publicKey, 10n ** 15n, STABLE_DECIMALS),
    ],
  }).compileToLegacyMessage();
  const transaction = new VersionedTransaction(message);
  transaction.sign([payer]);
  const { value } = await connection.simulateTransaction(transaction);
  assert.notEqual(value.err, null, 'value.err is set');
  assert.ok(Array.isArray(value.logs) && value.logs.length > 0, `value.logs ${JSON.stringify(value.logs)}`);
});

await step('h. sendTransaction (preflight) of the overdraft rejects with SendTransactionError + logs', ['funded'], async () => {
  const transaction = await overdraft();
  let rejected;
  try {
    await connection.sendTransaction(transaction);
  } catch (error) {
    rejected = error;
  }
  assert.ok(rejected, 'sendTransaction resolved instead of rejecting');
  assert.ok(rejected instanceof SendTransactionError, `not a SendTransactionError: ${describe(rejected)}`);
  const logs = rejected.logs;
  assert.ok(Array.isArray(logs) && logs.length > 0,
    `SendTransactionError.logs is ${JSON.stringify(logs)}: the error needs data.logs (message: ${rejected.transactionMessage})`);
});

await step('i. onSignature + confirmTransaction at commitment finalized', ['funded'], async () => {
  const { transaction, signature, blockhash, lastValidBlockHeight } =
    await signedTransfer(payer, Keypair.generate().publicKey, RENT_EXEMPT_ZERO);
  let listener;
  let fired = false;
  const notified = new Promise((resolve) => {
    listener = connection.onSignature(signature, (result, context) => {
      fired = true; // web3.js removes a signature listener itself once it fired
      resolve({ result, context });
    }, 'finalized');
  });
  try {
    await subscribed(listener, 'signatureSubscribe');
    await connection.sendRawTransaction(transaction.serialize());
    const { result, context } = await notified;
    assert.equal(result.err, null);
    assert.equal(typeof context.slot, 'number');
    const { value } = await connection.confirmTransaction(
      { signature, blockhash, lastValidBlockHeight },
      'finalized',
    );
    assert.equal(value.err, null);
    const { value: [status] } = await connection.getSignatureStatuses([signature]);
    assert.equal(status?.confirmationStatus, 'finalized');
  } finally {
    if (!fired) await connection.removeSignatureListener(listener);
  }
});

await step('i. onAccountChange fires for a transfer to the watched account', ['funded'], async () => {
  const watched = Keypair.generate().publicKey;
  let listener;
  const changed = new Promise((resolve) => {
    listener = connection.onAccountChange(watched, (info, context) => resolve({ info, context }), {
      commitment: 'confirmed',
    });
  });
  try {
    await subscribed(listener, 'accountSubscribe');
    await land(transfer(payer.publicKey, watched, 1_000_000), [payer]);
    const { info, context } = await changed;
    assert.equal(info.lamports, 1_000_000);
    assert.ok(info.owner.equals(SystemProgram.programId), `owner ${info.owner.toBase58()}`);
    assert.equal(typeof context.slot, 'number');
  } finally {
    await connection.removeAccountChangeListener(listener);
  }
});

await step('i. onSlotChange fires', [], async () => {
  let listener;
  const slot = new Promise((resolve) => {
    listener = connection.onSlotChange(resolve);
  });
  try {
    await subscribed(listener, 'slotSubscribe');
    const info = await slot;
    assert.equal(typeof info.slot, 'number');
    assert.equal(typeof info.parent, 'number');
    assert.equal(typeof info.root, 'number');
  } finally {
    await connection.removeSlotChangeListener(listener);
  }
});

await step('i. onLogs(address) fires for a transaction mentioning it', ['funded'], async () => {
  const mentioned = Keypair.generate().publicKey;
  let listener;
  let wanted;
  const seen = [];
  const logged = new Promise((resolve) => {
    listener = connection.onLogs(mentioned, (logs, context) => {
      seen.push(logs.signature);
      if (logs.signature === wanted) resolve({ logs, context });
    }, 'confirmed');
  });
  try {
    await subscribed(listener, 'logsSubscribe');
    const { transaction, signature } = await signedTransfer(payer, mentioned, RENT_EXEMPT_ZERO);
    wanted = signature;
    await connection.sendRawTransaction(transaction.serialize());
    const { logs } = await withTimeout(logged, 10_000, `logsNotification for ${signature} (got ${seen.length} others)`);
    assert.equal(logs.err, null);
    assert.ok(Array.isArray(logs.logs) && logs.logs.length > 0, 'logs.logs non-empty');
  } finally {
    await connection.removeOnLogsListener(listener);
  }
});

await step('j. getLatestBlockhash(finalized) + isBlockhashValid', [], async () => {
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash('finalized');
  assert.equal(typeof lastValidBlockHeight, 'number');
  assert.equal((await connection.isBlockhashValid(blockhash)).value, true);
  // A well-formed hash the simnet never issued is not valid.
  const unknown = base58(randomBytes(32));
  assert.equal((await connection.isBlockhashValid(unknown)).value, false);
});

await step('j. getFeeForMessage == 5000 for one signature', [], async () => {
  const { blockhash } = await connection.getLatestBlockhash();
  const message = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash,
    instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: recipient.publicKey, lamports: 1 })],
  }).compileToLegacyMessage();
  assert.equal((await connection.getFeeForMessage(message)).value, FEE_PER_SIGNATURE);
});

await step('j. getEpochInfo', [], async () => {
  const info = await connection.getEpochInfo();
  for (const key of ['epoch', 'slotIndex', 'slotsInEpoch', 'absoluteSlot']) {
    assert.equal(typeof info[key], 'number', key);
  }
  assert.ok(info.slotIndex < info.slotsInEpoch);
});

await step('j. getGenesisHash is a stable 32-byte base58 hash', [], async () => {
  const genesis = await connection.getGenesisHash();
  assert.equal(new PublicKey(genesis).toBytes().length, 32);
  assert.equal(await connection.getGenesisHash(), genesis);
});

await step('j. getBlockHeight, getSlot(processed), getVersion, getIdentity', [], async () => {
  assert.equal(typeof (await connection.getBlockHeight()), 'number');
  assert.equal(typeof (await connection.getSlot('processed')), 'number');
  assert.equal(typeof (await connection.getVersion())['solana-core'], 'string');
  // web3.js 1.x has no getIdentity method.
  const { identity } = await rawRpc('getIdentity', []);
  new PublicKey(identity);
});

await step('j. getRecentPrioritizationFees', [], async () => {
  const fees = await connection.getRecentPrioritizationFees();
  assert.ok(Array.isArray(fees));
  const forPayer = await connection.getRecentPrioritizationFees({ lockedWritableAccounts: [payer.publicKey] });
  assert.ok(Array.isArray(forPayer));
  for (const fee of [...fees, ...forPayer]) {
    assert.equal(typeof fee.slot, 'number');
    assert.equal(typeof fee.prioritizationFee, 'number');
  }
});

await step('j. a transaction with setComputeUnitLimit/setComputeUnitPrice lands', ['funded'], async () => {
  const before = await connection.getBalance(payer.publicKey);
  const transaction = new Transaction().add(
    ComputeBudgetProgram.setComputeUnitLimit({ units: 200_000 }),
    ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1_000 }),
    SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: recipient.publicKey, lamports: 1_000 }),
  );
  ctx.prioritySignature = await land(transaction, [payer]);
  ctx.priorityPaid = before - (await connection.getBalance(payer.publicKey)) - 1_000;
});

await step('j. its fee includes the priority fee (5000 + 200000 CU × 1000 µlamports = 5200)', ['prioritySignature'], async () => {
  assert.equal(ctx.priorityPaid, FEE_PER_SIGNATURE + 200);
});

// ---------------------------------------------------------------------------------------------

for (const [message, count] of wsErrors) {
  if (count > 1) console.log(`# web3.js: ${count} times: ${message}`);
}
if (failures.length) console.log(`# failed: ${failures.join(' | ')}`);
console.log(`${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
// web3.js keeps the websocket (and its reconnect timer) alive: exit explicitly.
process.exit(counts.failed ? 1 : 0);
