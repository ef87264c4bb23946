"""Conformance of Crucible's simnet with the real Solana Python clients (solana-py + solders).

    SIMNET_URL=http://127.0.0.1:8080/simnet/rpc python3 conformance.py

Every step prints `ok - <name>`, `not ok - <name>: <why>` or `skip - <name> (needs ...)`; the run
ends with `N passed, N failed, N skipped` and exits 1 if any step failed. A failed step does not
stop the run: later steps only skip when the ledger state they build on is missing.
"""

import asyncio
import hashlib
import os
import secrets
import sys
import traceback

import httpx
from solana.rpc.async_api import AsyncClient
from solana.rpc.commitment import Confirmed, Finalized
from solana.rpc.core import RPCException
from solana.rpc.websocket_api import connect
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.rpc.requests import IsBlockhashValid
from solders.rpc.responses import IsBlockhashValidResp, SignatureNotification, SubscriptionResult
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction
from spl.token.async_client import AsyncToken
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import get_associated_token_address

SIMNET_URL = os.environ.get("SIMNET_URL")
if not SIMNET_URL:
    sys.exit("SIMNET_URL is not set (e.g. http://127.0.0.1:8080/simnet/rpc)")
# The simnet serves PubSub on the same path as JSON-RPC.
WS_URL = "ws" + SIMNET_URL[len("http") :]

STEP_TIMEOUT_S = 20
LAMPORTS_PER_SOL = 1_000_000_000
FEE_PER_SIGNATURE = 5000
RENT_EXEMPT_ZERO = 890_880  # get_minimum_balance_for_rent_exemption(0) on every Solana cluster
STABLE_DECIMALS = 6
# The simnet's stablecoin mint: a fixed address, sha256 of this phrase.
MINT = Pubkey(hashlib.sha256(b"crucible simnet stablecoin mint").digest())

counts = {"passed": 0, "failed": 0, "skipped": 0}
failures: list[str] = []
# Ledger state the steps build on; a step names what it needs and skips without it.
ctx: dict = {}


def describe(error: BaseException) -> str:
    if isinstance(error, RPCException):
        # solana-py raises the parsed JSON-RPC error object (code and message).
        detail = error.args[0]
        text = f"RPC error {type(detail).__name__}: {getattr(detail, 'message', detail)}"
    elif isinstance(error, asyncio.TimeoutError):
        text = f"timed out after {STEP_TIMEOUT_S} s"
    elif isinstance(error, AssertionError):
        frame = traceback.extract_tb(error.__traceback__)[-1]
        text = f"assertion failed at line {frame.lineno} ({frame.line}): {error}"
    else:
        # solders answer-shape errors name the field that did not parse.
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:600]


async def step(name: str, needs: list[str], fn) -> None:
    missing = [key for key in needs if not ctx.get(key)]
    if missing:
        counts["skipped"] += 1
        print(f"skip - {name} (needs {', '.join(missing)})", flush=True)
        return
    try:
        await asyncio.wait_for(fn(), STEP_TIMEOUT_S)
        counts["passed"] += 1
        print(f"ok - {name}", flush=True)
    except Exception as error:  # noqa: BLE001 - every failure is reported, then the run goes on
        counts["failed"] += 1
        failures.append(name)
        print(f"not ok - {name}: {describe(error)}", flush=True)


async def raw_rpc(method: str, params: list):
    """Plain JSON-RPC, for the simnet's airdrop extension that solana-py cannot send."""
    async with httpx.AsyncClient() as http:
        reply = (await http.post(SIMNET_URL, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).json()
    if "error" in reply:
        raise RuntimeError(f"{method} -> error {reply['error']['code']}: {reply['error']['message']}")
    return reply["result"]


async def main() -> int:
    client = AsyncClient(SIMNET_URL, commitment=Confirmed)
    payer, recipient = Keypair(), Keypair()
    token = AsyncToken(client, MINT, TOKEN_PROGRAM_ID, payer)
    payer_ata = get_associated_token_address(payer.pubkey(), MINT)
    recipient_ata = get_associated_token_address(recipient.pubkey(), MINT)

    async def signed_transfer(lamports: int, to: Pubkey) -> Transaction:
        blockhash = (await client.get_latest_blockhash()).value.blockhash
        ix = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=lamports))
        return Transaction([payer], Message.new_with_blockhash([ix], payer.pubkey(), blockhash), blockhash)

    async def airdrop():
        sig = (await client.request_airdrop(payer.pubkey(), 2 * LAMPORTS_PER_SOL)).value
        await client.confirm_transaction(sig, Confirmed, sleep_seconds=0.25)
        ctx["funded"] = True
        assert (await client.get_balance(payer.pubkey())).value == 2 * LAMPORTS_PER_SOL

    await step("request_airdrop 2 SOL + confirm_transaction + get_balance", [], airdrop)

    async def rent():
        assert (await client.get_minimum_balance_for_rent_exemption(0)).value == RENT_EXEMPT_ZERO

    await step("get_minimum_balance_for_rent_exemption(0) == 890880", [], rent)

    async def sol_transfer():
        before = (await client.get_balance(payer.pubkey())).value
        amount = RENT_EXEMPT_ZERO + 100_000
        sig = (await client.send_transaction(await signed_transfer(amount, recipient.pubkey()))).value
        await client.confirm_transaction(sig, Confirmed, sleep_seconds=0.25)
        assert (await client.get_balance(recipient.pubkey())).value == amount
        assert (await client.get_balance(payer.pubkey())).value == before - amount - FEE_PER_SIGNATURE

    await step("SOL transfer (solders Transaction) sent and confirmed, 5000-lamport fee", ["funded"], sol_transfer)

    async def stable_airdrop():
        sig = await raw_rpc(
            "requestAirdrop", [str(payer.pubkey()), LAMPORTS_PER_SOL, {"stablecoinAmount": 50_000_000}]
        )
        await client.confirm_transaction(Signature.from_string(sig), Confirmed, sleep_seconds=0.25)
        ctx["stable"] = True

    await step("requestAirdrop with {stablecoinAmount} (raw JSON-RPC), confirmed", ["funded"], stable_airdrop)

    async def mint_base64():
        account = (await client.get_account_info(MINT, encoding="base64")).value
        assert account is not None, "mint account missing"
        assert account.owner == TOKEN_PROGRAM_ID, f"owner {account.owner}"
        assert len(account.data) == 82, f"data is {len(account.data)} bytes, not the 82-byte Mint layout"
        # spl.token decodes the bytes with its MINT_LAYOUT.
        info = await token.get_mint_info()
        assert info.decimals == STABLE_DECIMALS and info.is_initialized and info.supply > 0, info

    await step("get_account_info (base64) of the mint, decoded by spl.token MINT_LAYOUT", ["stable"], mint_base64)

    async def mint_parsed():
        account = (await client.get_account_info_json_parsed(MINT)).value
        assert account is not None, "mint account missing"
        parsed = account.data.parsed
        assert parsed["type"] == "mint", parsed
        assert parsed["info"]["decimals"] == STABLE_DECIMALS, parsed
        assert int(parsed["info"]["supply"]) > 0, parsed

    await step("get_account_info (jsonParsed) of the mint", ["stable"], mint_parsed)

    async def ata_base64():
        info = await token.get_account_info(payer_ata)  # spl.token ACCOUNT_LAYOUT
        assert info.amount == 50_000_000 and info.owner == payer.pubkey() and info.mint == MINT, info

    await step("get_account_info (base64) of the token account, decoded by spl.token ACCOUNT_LAYOUT", ["stable"], ata_base64)

    async def ata_parsed():
        parsed = (await client.get_account_info_json_parsed(payer_ata)).value.data.parsed
        assert parsed["type"] == "account", parsed
        assert parsed["info"]["tokenAmount"]["amount"] == "50000000", parsed

    await step("get_account_info (jsonParsed) of the token account", ["stable"], ata_parsed)

    async def token_balance():
        value = (await client.get_token_account_balance(payer_ata)).value
        assert (value.amount, value.decimals, value.ui_amount_string) == ("50000000", 6, "50"), value

    await step("get_token_account_balance", ["stable"], token_balance)

    async def token_supply():
        value = (await client.get_token_supply(MINT)).value
        assert value.decimals == STABLE_DECIMALS and int(value.amount) >= 50_000_000, value

    await step("get_token_supply", ["stable"], token_supply)

    async def token_transfer():
        # spl.token's client sends and confirms (polling) the ATA creation itself.
        created = await token.create_associated_token_account(recipient.pubkey())
        assert created == recipient_ata
        sig = (
            await token.transfer_checked(
                payer_ata, recipient_ata, payer.pubkey(), 1_500_000, STABLE_DECIMALS, multi_signers=None
            )
        ).value
        await client.confirm_transaction(sig, Confirmed, sleep_seconds=0.25)
        assert (await client.get_token_account_balance(recipient_ata)).value.amount == "1500000"

    await step("spl.token AsyncToken create_associated_token_account + transfer_checked", ["stable"], token_transfer)

    async def signatures():
        first = (await client.get_signatures_for_address(payer.pubkey(), limit=2)).value
        assert len(first) == 2, first
        assert first[0].slot >= first[1].slot, "newest first"
        older = (await client.get_signatures_for_address(payer.pubkey(), limit=2, before=first[1].signature)).value
        assert older and not {s.signature for s in older} & {s.signature for s in first}, older

    await step("get_signatures_for_address (limit, before)", ["funded"], signatures)

    async def simulate_failure():
        balance = (await client.get_balance(payer.pubkey())).value
        tx = await signed_transfer(balance + LAMPORTS_PER_SOL, recipient.pubkey())
        value = (await client.simulate_transaction(tx, sig_verify=True)).value
        assert value.err is not None, "err is null for an overdraft"
        assert value.logs, f"logs {value.logs}"

    await step("simulate_transaction of an overdrawing transfer: err and logs", ["funded"], simulate_failure)

    async def chain_info():
        info = (await client.get_epoch_info()).value
        assert info.slot_index < info.slots_in_epoch, info
        genesis = (await client.get_genesis_hash()).value
        assert isinstance(genesis, Hash)
        assert (await client.get_block_height()).value >= 0

    await step("get_epoch_info, get_genesis_hash, get_block_height", [], chain_info)

    async def fee_and_blockhash():
        blockhash = (await client.get_latest_blockhash()).value.blockhash
        ix = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=recipient.pubkey(), lamports=1))
        message = Message.new_with_blockhash([ix], payer.pubkey(), blockhash)
        assert (await client.get_fee_for_message(message)).value == FEE_PER_SIGNATURE
        # solana-py 0.36 has no is_blockhash_valid method: send solders' typed request through
        # the client's own provider.
        valid = await client._provider.make_request(IsBlockhashValid(blockhash), IsBlockhashValidResp)
        assert valid.value is True
        unknown = Hash(secrets.token_bytes(32))
        invalid = await client._provider.make_request(IsBlockhashValid(unknown), IsBlockhashValidResp)
        assert invalid.value is False

    await step("get_fee_for_message == 5000, isBlockhashValid", [], fee_and_blockhash)

    async def websocket_signature():
        tx = await signed_transfer(RENT_EXEMPT_ZERO, Keypair().pubkey())
        async with connect(WS_URL) as ws:
            await ws.signature_subscribe(tx.signatures[0], Finalized)
            (ack,) = await ws.recv()
            assert isinstance(ack, SubscriptionResult), ack
            await client.send_transaction(tx)
            (note,) = await ws.recv()
            assert isinstance(note, SignatureNotification), note
            assert note.subscription == ack.result
            assert note.result.value.err is None, note

    await step("websocket signature_subscribe (finalized) -> signatureNotification", ["funded"], websocket_signature)

    await client.close()
    if failures:
        print(f"# failed: {' | '.join(failures)}")
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
