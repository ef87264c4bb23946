"""An AI agent's side of Crucible's MCP server, played with the official MCP Python SDK.

The Rust integration tests (host/tests/api/mcp.rs) start the servers, make the accounts and keys,
and run one scenario of this script each; it prints one JSON object with what it saw, which the
test checks. Nothing here knows Crucible's REST paths: everything goes through MCP tools and
resources, as it would for any agent.

    python3 play.py <scenario> <url> <key> [scenario arguments as JSON]
"""

import asyncio
import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def connect(url, key, mode="auto", message_handler=None):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(
        streamable_http_client(url, http_client=http),
        mode=mode,
        message_handler=message_handler,
    )


async def call(client, tool, arguments):
    """A tool's answer as JSON, or an exception carrying the tool error's message."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        raise ToolError(tool, text)
    return json.loads(text)


class ToolError(Exception):
    def __init__(self, tool, message):
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.message = message


def next_action(state):
    """A simple runner: fight what is here, else take an exit (stairs first), else whatever the
    state allows. It is not good at the game; it plays every turn to the run's end."""
    actions = state["availableActions"]
    turn = state["turnNumber"] + 1
    if "fight" in actions:
        return {"action": "fight", "turnNumber": turn}
    exits = state["room"]["exits"]
    if "move" in actions and exits:
        down = [e for e in exits if e["direction"] == "down"]
        fresh = [e for e in exits if not e["visited"]]
        exit = (down or fresh or exits)[turn % len(down or fresh or exits)]
        return {"action": "move", "target": exit["direction"], "turnNumber": turn}
    for action in ("rest", "examine", "inventory"):
        if action in actions:
            return {"action": action, "turnNumber": turn}
    return {"action": actions[0], "turnNumber": turn}


async def play_run(client, run_id, max_turns=3000):
    """Play `run_id` to its end with take_dungeon_turn; returns (turns taken, final state)."""
    page = await call(client, "get_dungeon_run", {"runId": run_id})
    state = page["state"]
    turns = 0
    while state["status"] == "active" and turns < max_turns:
        move = next_action(state)
        try:
            state = await call(client, "take_dungeon_turn", {"runId": run_id, **move})
        except ToolError as refused:
            # An illegal action costs AP and changes the state: read it again.
            if "turn" not in refused.message.lower() and "action" not in refused.message.lower():
                raise
            state = (await call(client, "get_dungeon_run", {"runId": run_id}))["state"]
        turns += 1
    return turns, state


async def tools(url, key, _args):
    async with connect(url, key) as client:
        listed = await client.list_tools()
        return {
            "protocol": client.session.protocol_version,
            "tools": [tool.name for tool in listed.tools],
            "schemas": {tool.name: tool.input_schema for tool in listed.tools},
        }


async def dungeon(url, key, args):
    """Today's dungeon, start to end, paid from the embedded wallet, with the run's resource
    subscribed (subscriptions/listen) while it is played."""
    async with connect(url, key) as client:
        today = await call(client, "get_dungeon", {})
        wallets = await call(client, "list_wallets", {})
        embedded = next(w for w in wallets["wallets"] if w["kind"] == "custodial")
        quote = await call(client, "quote_dungeon_entry", {"wallet": embedded["address"]})
        entered = await call(
            client,
            "enter_dungeon",
            {
                "quoteId": quote["quoteId"],
                "payerWallet": embedded["address"],
                "payFrom": "embedded",
                "class": args.get("class", "fighter"),
            },
        )
        run_id = entered["runId"]
        uri = f"crucible://dungeon/runs/{run_id}"
        updates = []
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            async with anyio.create_task_group() as group:

                async def collect():
                    async for event in subscription:
                        updates.append(event.uri)

                group.start_soon(collect)
                turns, state = await play_run(client, run_id)
                # The last turn's notification may still be on its way.
                with anyio.move_on_after(5):
                    while not updates:
                        await anyio.sleep(0.05)
                group.cancel_scope.cancel()
        after = await call(client, "list_wallets", {})
        events = await call(client, "get_dungeon_run_events", {"runId": run_id, "afterSeq": 0})
        resource = await client.read_resource(uri)
        return {
            "dungeonId": today["dungeonId"],
            "runId": run_id,
            "turns": turns,
            "status": state["status"],
            "updates": len(updates),
            "updateUris": sorted(set(updates)),
            "usdcBefore": embedded["usdcRaw"],
            "usdcAfter": next(w for w in after["wallets"] if w["kind"] == "custodial")["usdcRaw"],
            "events": len(events["events"]),
            "resourceStatus": json.loads(resource.contents[0].text)["state"]["status"],
        }


async def register(url, key, args):
    async with connect(url, key) as client:
        try:
            answer = await call(
                client,
                "register_for_tournament",
                {
                    "tournamentId": args["tournamentId"],
                    "registeredWallet": args["wallet"],
                    "txSignature": None,
                },
            )
            return {"ok": True, "answer": answer}
        except ToolError as refused:
            return {"ok": False, "error": refused.message}


async def create_agent(url, key, args):
    async with connect(url, key) as client:
        created = await call(client, "create_agent", args["agent"])
        return created.get("data", created)


async def start_agent(url, key, args):
    async with connect(url, key) as client:
        started = await call(client, "start_agent", {"agentId": args["agentId"]})
        listed = await call(client, "list_agents", {})
        agent = await call(client, "get_agent", {"agentId": args["agentId"]})
        return {"started": started, "listed": listed, "agent": agent}


async def refused(url, key, args):
    """Call one tool that must be refused; return its message."""
    async with connect(url, key) as client:
        try:
            answer = await call(client, args["tool"], args["arguments"])
            return {"refused": False, "answer": answer}
        except ToolError as refusal:
            return {"refused": True, "error": refusal.message}


async def session_play(url, key, args):
    """A 2025-era session (initialize, Mcp-Session-Id) through `url`, which may send each request
    to another node: subscribe to a run with resources/subscribe, play it to its end, count the
    notifications/resources/updated that arrive on the session's stream."""
    updates = []

    async def on_message(message):
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            updates.append(root.params.uri)

    async with connect(url, key, mode="legacy", message_handler=on_message) as client:
        uri = f"crucible://dungeon/runs/{args['runId']}"
        await client.subscribe_resource(uri)
        listed = await client.list_tools()
        turns, state = await play_run(client, args["runId"], max_turns=args.get("maxTurns", 3000))
        with anyio.move_on_after(5):
            while not updates:
                await anyio.sleep(0.05)
        return {
            "protocol": client.session.protocol_version,
            "tools": len(listed.tools),
            "turns": turns,
            "status": state["status"],
            "updates": len(updates),
        }


SCENARIOS = {
    "tools": tools,
    "dungeon": dungeon,
    "register": register,
    "create_agent": create_agent,
    "start_agent": start_agent,
    "refused": refused,
    "session_play": session_play,
}


def main():
    scenario, url, key = sys.argv[1:4]
    args = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    result = asyncio.run(SCENARIOS[scenario](url, key, args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
