#!/usr/bin/env python3
"""An example simworld agent in its own process, speaking the JSON-lines protocol (standard library only).

Run it with:  simworld run --agent 'cmd:python examples/agent.py' --scenario split-balance-three-ways

simworld writes one observation per line on stdin; this script answers each with one
action line on stdout: {"tool": NAME, "args": {...}}, or null to stop. It splits the
customer's unpaid balance into three: find the customer by the e-mail in the request,
follow their policy to the plan, take the system's quote, write it, finish. Any
language can do the same: read a line, write a line, flush.
"""

import json
import re
import sys


def decide(obs, memory):
    """The next action for one observation."""
    last, result = obs["last_tool"], obs["last_result"]
    if last is None:
        email = re.search(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", obs["request"]).group(0)
        return {"tool": "find_customer", "args": {"query": email}}
    if last == "find_customer":
        return {"tool": "get_customer", "args": {"customer_id": result["customers"][0]["id"]}}
    if last == "get_customer":
        return {"tool": "get_policy", "args": {"policy_id": result["policy_ids"][0]}}
    if last == "get_policy":
        memory["plan_id"] = result["plan_ids"][0]
        return {"tool": "quote_split", "args": {"plan_id": memory["plan_id"], "count": 3, "remainder": "last"}}
    if last == "quote_split":
        return {"tool": "set_schedule", "args": {"plan_id": memory["plan_id"], "instalments": result["instalments"]}}
    if last == "set_schedule" and obs["last_status"] == "ok":
        return {"tool": "finish", "args": {"summary": "Split the unpaid balance into 3 instalments."}}
    return None


def main():
    memory = {}
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") == "end":
            break
        action = decide(message, memory)
        sys.stdout.write(json.dumps(action) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
