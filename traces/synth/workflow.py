"""Synthetic agentic-workflow trajectories: a customer-support agent with business tools (`sim_NNN`).

All workflow trajectories share one large system prompt (company policies, business rules and the
intent catalogue) and one list of a few dozen tools (`WorkflowWorld`, built once per run). Each
trajectory is a customer conversation: user requests, each handled with zero to three tool
rounds (order, shipment, policy, refund… tools returning JSON) and a final reply, written by
`workflow_text.Agent` at the reference model's answer lengths. Assistant rows carry the
request's `intent_codes` (the inline-accuracy ground truth) and state it as `Intent: Ixxx`. User
rows wait a think time of seconds to minutes; tool rows wait a short API latency.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ..model import Row, Trajectory
from .workflow_text import Agent

INTENTS = (
    (
        "order_status",
        "Customer asks where an order is or when it will arrive",
        ("get_order", "get_shipment", "track_package"),
    ),
    ("cancel_order", "Customer wants to cancel an order that has not shipped", ("get_order", "cancel_order")),
    (
        "return_request",
        "Customer wants to return one or more items",
        ("get_order", "check_return_eligibility", "create_return"),
    ),
    ("refund_status", "Customer asks about a refund already requested", ("get_refund", "get_order")),
    ("change_address", "Customer wants to change a shipping address", ("get_order", "update_shipping_address")),
    (
        "damaged_item",
        "Customer received a damaged or defective item",
        ("get_order", "get_policy", "create_replacement"),
    ),
    (
        "missing_package",
        "Package marked delivered but not received",
        ("get_shipment", "track_package", "open_carrier_claim"),
    ),
    (
        "apply_discount",
        "Customer asks to apply a coupon or price adjustment",
        ("get_order", "validate_coupon", "apply_coupon"),
    ),
    ("account_update", "Customer wants to change account details", ("get_customer", "update_customer")),
    ("loyalty_points", "Customer asks about loyalty points or tier", ("get_customer", "get_loyalty_balance")),
    ("product_question", "Customer asks about a product's specifications or stock", ("get_product", "check_inventory")),
    (
        "warranty_claim",
        "Customer wants to use the product warranty",
        ("get_order", "get_policy", "create_warranty_claim"),
    ),
    ("payment_issue", "Customer reports a failed or double charge", ("get_payment", "get_order")),
    (
        "subscription_change",
        "Customer wants to pause, change or cancel a subscription",
        ("get_subscription", "update_subscription"),
    ),
    ("escalation", "Customer asks for a human agent or a manager", ("create_ticket", "escalate_to_human")),
    ("exchange_item", "Customer wants a different size or colour", ("get_order", "check_inventory", "create_exchange")),
    ("invoice_request", "Customer needs an invoice or receipt", ("get_order", "send_invoice")),
    ("delivery_reschedule", "Customer wants another delivery date", ("get_shipment", "reschedule_delivery")),
    ("price_match", "Customer asks for a price match", ("get_product", "get_policy", "apply_price_adjustment")),
    ("general_policy", "Customer asks about a store policy", ("get_policy",)),
)
FIRST = "Ava Ben Chen Dana Eli Farah Gus Hana Ivan Jia Kofi Lena Mateo Nia Omar Priya Quinn Rosa Sam Tara Uma Vik Wen Yara Zed".split()
LAST = (
    "Smith Garcia Chen Okafor Novak Rossi Tanaka Silva Kowalski Haddad Larsen Dubois Ahmed Moreau Ivanova Park".split()
)
PRODUCTS = "wireless headphones|running shoes|coffee grinder|yoga mat|desk lamp|backpack|smart watch|blender|rain jacket|office chair|phone case|water bottle|air fryer|hiking boots|bluetooth speaker".split(
    "|"
)
CARRIERS = ("UPS", "FedEx", "DHL", "USPS")
POLICY_AREAS = (
    "returns",
    "refunds",
    "shipping",
    "cancellations",
    "warranty",
    "exchanges",
    "price adjustments",
    "loyalty",
    "subscriptions",
    "payments",
    "privacy",
    "escalation",
)


#: The tools that take the customer's id.
CUSTOMER_TOOLS = (
    "get_customer",
    "update_customer",
    "get_loyalty_balance",
    "search_orders",
    "list_orders",
    "get_subscription",
    "update_subscription",
    "create_ticket",
    "add_note",
    "send_email",
)


def _tool(name: str, description: str, params: dict[str, tuple[str, str]], required: list[str]) -> dict[str, Any]:
    props = {k: {"type": t, "description": d} for k, (t, d) in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


class WorkflowWorld:
    """The shared part of every workflow trajectory: system prompt, tools, intent codes."""

    def __init__(self, rng: random.Random) -> None:
        self.intent_codes = {name: f"I{k * 3 + 7:03d}" for k, (name, _, _) in enumerate(INTENTS)}
        self.descriptions = {name: d for name, d, _ in INTENTS}
        names = sorted(
            {t for _, _, tools in INTENTS for t in tools}
            | {"get_customer", "search_orders", "list_orders", "add_note", "send_email"}
        )
        self.tools = [self._tool_def(rng, n) for n in names]
        self.rules: dict[str, list[str]] = {}  # policy area -> its rules, as the system prompt lists them
        self.system = self._system(rng)

    def _tool_def(self, rng: random.Random, name: str) -> dict[str, Any]:
        obj = name.split("_", 1)[-1].replace("_", " ")
        params: dict[str, tuple[str, str]] = {}
        if "order" in name or name in (
            "create_return",
            "check_return_eligibility",
            "create_replacement",
            "create_exchange",
            "send_invoice",
            "apply_coupon",
            "validate_coupon",
            "create_warranty_claim",
            "apply_price_adjustment",
        ):
            params["order_id"] = ("string", "The order identifier, e.g. 'W1234567'.")
        if name in CUSTOMER_TOOLS:
            params["customer_id"] = ("string", "The customer identifier, e.g. 'C-10432'.")
        if "shipment" in name or name in ("track_package", "open_carrier_claim", "reschedule_delivery"):
            params["tracking_number"] = ("string", "The carrier tracking number.")
        if "product" in name or name == "check_inventory":
            params["product_id"] = ("string", "The product SKU.")
        if name == "get_policy":
            params["topic"] = ("string", "One of: " + ", ".join(POLICY_AREAS) + ".")
        for extra in rng.sample(
            ("reason", "note", "amount", "items", "new_value", "priority", "channel"), rng.randint(1, 3)
        ):
            params[extra] = (
                "string" if extra != "amount" else "number",
                f"The {extra.replace('_', ' ')} for this {obj} request.",
            )
        desc = (
            f"{name.replace('_', ' ').capitalize()}. Use this tool to {name.split('_')[0]} the {obj} of the current customer. "
            + rng.choice(
                (
                    "Only call it after verifying the customer's identity.",
                    "Returns a JSON object.",
                    "Fails if the order is not in an eligible state.",
                    "Requires explicit customer confirmation for changes.",
                )
            )
        )
        return _tool(
            name,
            desc,
            params,
            [k for k in params if k in ("order_id", "customer_id", "tracking_number", "product_id", "topic")][:1],
        )

    def _system(self, rng: random.Random) -> str:
        out = [
            "# Role\n\nYou are the customer-support agent of Northwind Outfitters, an online retailer. You help customers with orders, "
            "shipments, returns, refunds, accounts and products, using the tools provided. Be accurate, concise and polite.",
            "# Identity verification\n\nBefore reading or changing any order or account data you must verify the customer by email "
            "address or by order id plus postal code. Never reveal data of another customer.",
            "# Intent classification\n\nFor every customer request, first classify its intent and state it in your reasoning as "
            "`Intent: <code>`. The intent codes are:\n"
            + "\n".join(f"- {self.intent_codes[n]}: {n} — {d}." for n, d, _ in INTENTS),
        ]
        for area in POLICY_AREAS:
            rules = []
            for k in range(rng.randint(8, 14)):
                days = rng.choice((7, 14, 30, 45, 60, 90))
                amount = rng.choice((25, 50, 100, 250, 500))
                rules.append(
                    f"{k + 1}. "
                    + rng.choice(
                        (
                            f"Requests about {area} made within {days} days of delivery are handled without manager approval.",
                            f"Amounts above ${amount} require a supervisor ticket (create_ticket with priority 'high') before confirming.",
                            f"Always confirm the details with the customer and obtain an explicit 'yes' before changing anything related to {area}.",
                            f"Items marked final sale are excluded from {area}, unless they arrived damaged; in that case follow the warranty rules.",
                            f"If the order contains more than {rng.randint(2, 6)} items, handle each item separately and summarise the outcome at the end.",
                            f"Gift orders: {area} are credited to the gift giver's account as store credit, never to the recipient.",
                            "Do not promise delivery dates; quote the carrier's estimate from the tracking tool and say it is an estimate.",
                            f"Loyalty members of tier Gold or higher get {rng.choice((5, 10, 15))}% extra store credit on {area} resolutions.",
                        )
                    )
                )
            self.rules[area] = [x.split(". ", 1)[1] for x in rules]
            out.append(f"# Policy: {area}\n\n" + "\n".join(rules))
        out.append(
            "# Style\n\nAnswer in plain text, at most a short paragraph. Transfer to a human agent only when the policy requires it or the customer insists twice."
        )
        return "\n\n".join(out)


def _think_time(rng: random.Random) -> float:
    return round(min(240.0, max(2.0, rng.lognormvariate(2.8, 0.8))), 3)


def _api_latency(rng: random.Random) -> float:
    return round(min(12.0, rng.lognormvariate(-1.0, 0.7)), 4)


class _Customer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        self.id = f"C-{rng.randint(10000, 99999)}"
        self.email = self.name.lower().replace(" ", ".") + "@example.com"
        self.orders = [f"W{rng.randint(1000000, 9999999)}" for _ in range(rng.randint(1, 4))]

    def slots(self) -> dict[str, object]:
        return {
            "name": self.name.split()[0],
            "full": self.name,
            "email": self.email,
            "cust": self.id,
            "norders": len(self.orders),
        }

    def result(self, tool: str, order: str) -> dict[str, Any]:
        r = self.rng
        if tool in ("get_customer", "update_customer", "get_loyalty_balance"):
            return {
                "customer_id": self.id,
                "name": self.name,
                "email": self.email,
                "tier": r.choice(("Standard", "Silver", "Gold", "Platinum")),
                "points": r.randint(0, 20000),
                "orders": self.orders,
            }
        if tool in ("get_shipment", "track_package", "reschedule_delivery", "open_carrier_claim"):
            events = [
                {
                    "time": f"2026-0{r.randint(1, 9)}-{r.randint(10, 28)}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:00Z",
                    "status": r.choice(
                        (
                            "label created",
                            "in transit",
                            "arrived at facility",
                            "out for delivery",
                            "delivered",
                            "exception: address issue",
                        )
                    ),
                }
                for _ in range(r.randint(2, 7))
            ]
            return {
                "tracking_number": f"1Z{r.randint(10**9, 10**10 - 1)}",
                "carrier": r.choice(CARRIERS),
                "order_id": order,
                "events": events,
                "estimated_delivery": f"2026-0{r.randint(1, 9)}-{r.randint(10, 28)}",
            }
        if tool == "get_policy":
            return {
                "topic": r.choice(POLICY_AREAS),
                "text": " ".join(
                    r.choice(
                        (
                            "Items may be returned within 30 days.",
                            "Refunds go to the original payment method.",
                            "Final-sale items are excluded.",
                            "Shipping fees are not refunded unless the item was damaged.",
                            "Exchanges ship free of charge.",
                        )
                    )
                    for _ in range(r.randint(2, 6))
                ),
            }
        if tool in (
            "get_order",
            "search_orders",
            "list_orders",
            "cancel_order",
            "update_shipping_address",
            "create_return",
            "check_return_eligibility",
            "create_exchange",
            "create_replacement",
        ):
            items: list[dict[str, Any]] = [
                {
                    "product_id": f"SKU-{r.randint(1000, 9999)}",
                    "name": r.choice(PRODUCTS),
                    "quantity": r.randint(1, 3),
                    "price": round(r.uniform(5, 400), 2),
                    "final_sale": r.random() < 0.1,
                }
                for _ in range(r.randint(1, 5))
            ]
            return {
                "order_id": order,
                "customer_id": self.id,
                "status": r.choice(("processing", "shipped", "delivered", "cancelled", "returned")),
                "items": items,
                "total": round(sum(i["price"] * i["quantity"] for i in items), 2),
                "placed_at": f"2026-0{r.randint(1, 9)}-{r.randint(10, 28)}",
                "eligible": r.random() < 0.8,
            }
        return {
            "ok": r.random() < 0.9,
            "reference": f"REF-{r.randint(100000, 999999)}",
            "message": f"{tool.replace('_', ' ')} completed for order {order}",
        }


def _user_text(rng: random.Random, intent: str, c: _Customer, order: str) -> str:
    what = intent.replace("_", " ")
    opener = rng.choice(("Hi,", "Hello,", "Hey there.", "Good morning.", "", "Hi again,"))
    return f"{opener} I need help with a {what} for order {order}. My email is {c.email}. " + rng.choice(
        (
            "It's been a week and I still don't have it.",
            "The item arrived and it's not what I expected.",
            "Can you do this today?",
            "I was charged twice, please check.",
            "Please let me know what my options are.",
            "My name is " + c.name + ".",
        )
    )


def _call(rng: random.Random, k: int, tool: str, c: _Customer, order: str) -> dict[str, Any]:
    args: dict[str, Any] = (
        {"customer_id": c.id} if tool in (*CUSTOMER_TOOLS, "escalate_to_human") else {"order_id": order}
    )
    if tool == "get_policy":
        args = {"topic": rng.choice(POLICY_AREAS)}
    return {
        "id": f"call_{k}_{rng.randint(10**7, 10**8 - 1)}",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(args)},
    }


def workflow_trajectory(
    rng: random.Random, world: WorkflowWorld, cid: str, client_turns: int, *, open_ended: bool
) -> Trajectory:
    """One workflow conversation with exactly `client_turns` client rows (users + tool rows)."""
    c = _Customer(rng)
    rows: list[Row] = []
    remaining = client_turns
    calls = 0
    agent = Agent(rng, world, c.slots())
    while remaining > 0:
        name, _, tools = rng.choice(INTENTS)
        order = rng.choice(c.orders)
        text = _user_text(rng, name, c, order)
        if not rows:
            rows.append(Row(1, "user", content=text, system=world.system, tools=tuple(world.tools)))
        else:
            rows.append(Row(len(rows) + 1, "user", content=text, delay_seconds=_think_time(rng)))
        remaining -= 1
        agent.request(name, order)
        rounds = min(remaining, rng.choice((0, 1, 1, 2, 2, 3)))
        for k in range(rounds):
            tool = tools[k % len(tools)]
            call = _call(rng, calls, tool, c, order)
            calls += 1
            rows.append(
                Row(
                    len(rows) + 1,
                    "assistant",
                    reasoning_content=agent.plan(tool, k),
                    tool_calls=(call,),
                    intent_codes=(agent.code,),
                )
            )
            result = c.result(tool, order)
            agent.saw(tool, result)
            rows.append(
                Row(
                    len(rows) + 1,
                    "tool",
                    tool_results=({"tool_call_id": call["id"], "content": json.dumps(result)},),
                    delay_seconds=_api_latency(rng),
                )
            )
            remaining -= 1
        if remaining == 0 and open_ended:
            break
        reasoning, reply = agent.reply()
        rows.append(
            Row(len(rows) + 1, "assistant", content=reply, reasoning_content=reasoning, intent_codes=(agent.code,))
        )
    return Trajectory(cid, tuple(rows), source="synthetic")
