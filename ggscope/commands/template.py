"""``ggscope template FILE``: a chat template as text, what the checks say, what it renders.

Why: a template is code a runtime executes on every request; reviewing it needs its
text with line numbers (findings point at lines), the template findings of
``validate`` for that key, and what it renders for real conversations - rendered the
way ``validate`` does, in Jinja2's immutable sandbox inside a forked child with a
memory and time budget, so a hostile template costs at most that budget.

Contract: template text and rendered output are file text: each line is escaped
(``escape_text``, plus invisible characters shown as ``\\uXXXX``); ``--json`` writes one
object, text that is not UTF-8 as ``{"bytes": hex}``.  Exit status: 0 no error-level
finding, 1 an error-level finding for this template, 2 usage, no such template,
unreadable file, or --messages that are not a JSON list of messages.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ggscope.commands.common import error, open_or_report
from ggscope.core.escape import escape_text
from ggscope import __version__
from ggscope.core.escape import json_text

HELP = "show a chat template, its findings and what it renders"
DESCRIPTION = """\
Print one of the file's chat templates (tokenizer.chat_template, or the named
tokenizer.chat_template.NAME) with line numbers, the template findings of
`ggscope validate` for it (GG13xx), and what it renders in Jinja2's sandbox for the
standard conversations (system + user; user, assistant, user; a tool call when the
template mentions tools; with add_generation_prompt false and true) or for the
conversation --messages gives.  Rendering runs in a child process capped at 512 MiB
more memory, 5 s of CPU and 10 s of wall time."""
EPILOG = """\
examples:
  ggscope template model.gguf
  ggscope template model.gguf --name tool_use
  ggscope template model.gguf --messages '[{"role": "user", "content": "Hi"}]'
  ggscope template model.gguf --messages chat.json --json | jq .renders

JSON: {"version", "file", "key", "name", "templates": [names], "text",
"findings": [{"code", "severity", "message", ...}], "renders": [{"conversation",
"add_generation_prompt", "outcome", "output", "error"}]}; outcome is ok, raised (the
template called raise_exception), security (the sandbox refused), error or budget.
exit status: 0 ok, 1 an error-level finding, 2 usage, unreadable file or no such template."""


def add_arguments(p) -> None:
    p.add_argument("file", help="model file (GGUF)")
    p.add_argument("--name", default="default",
                   help="which template: default (tokenizer.chat_template) or NAME (tokenizer.chat_template.NAME)")
    p.add_argument("--messages", metavar="JSON",
                   help="a JSON list of {role, content} messages, or a file holding one, to render instead")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _messages(arg: str | None) -> tuple[list | None, str | None]:
    if arg is None:
        return None, None
    text = arg
    if not arg.lstrip().startswith(("[", "{")):
        try:
            text = Path(arg).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            from ggscope.rules.base import quoted  # start-up: numpy, asyncio only when this command needs it
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            return None, f"--messages: cannot read {quoted(arg)}: {why}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"--messages is not JSON: {exc}"
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        return None, "--messages must be a JSON list of objects such as {\"role\": \"user\", \"content\": \"Hi\"}"
    return value, None


def _line(text: str) -> str:
    from ggscope.rules.templates.hidden import invisible  # start-up: numpy, asyncio only when this command needs it
    hidden = {i for i, _ in invisible(text)}
    if hidden:
        text = "".join(f"\\u{ord(c):04x}" if i in hidden else c for i, c in enumerate(text))
    return escape_text(text)


def _numbered(text: str, out: list[str], indent: str = "  ") -> None:
    lines = text.split("\n")
    width = len(str(len(lines)))
    out.extend(f"{indent}{no:>{width}}  {_line(line)}" for no, line in enumerate(lines, 1))


def run(args) -> int:
    from ggscope.model.summary import chat_templates  # start-up: one-shot commands load only what they use
    messages, problem = _messages(args.messages)
    if problem:
        error(problem)
        return 2
    mf = open_or_report(args.file)
    if mf is None:
        return 2
    found = dict(chat_templates(mf.metadata))
    if args.name not in found:
        have = ", ".join(escape_text(n) for n in found) or "none"
        error(f"{escape_text(mf.path)} has no chat template \"{escape_text(args.name)}\" (templates: {have})")
        return 2
    key = found[args.name]
    text = mf.metadata[key]

    from ggscope.rules.templates import RULES  # start-up: numpy, asyncio only when this command needs it
    from ggscope.rules.templates.sandbox import render_all  # start-up: numpy, asyncio only when this command needs it
    from ggscope.rules.templates.sources import special_texts  # start-up: numpy, asyncio only when this command needs it
    from ggscope.validate.runner import validate  # start-up: numpy, asyncio only when this command needs it
    node_path = mf.metadata_nodes.get(key, "")
    findings = [f for f in validate(mf, RULES) if f.path == node_path]
    renders = render_all(text, special_texts(mf), messages)
    status = 1 if any(f.severity.value == "error" for f in findings) else 0

    if args.json:
        doc = {"version": __version__, "file": json_text(mf.path), "key": json_text(key), "name": json_text(args.name),
               "templates": [json_text(n) for n in found], "text": json_text(text),
               "findings": [f.as_dict() | {"file": json_text(f.file), "message": json_text(f.message)}
                            for f in findings],
               "renders": [{"conversation": r.conversation, "add_generation_prompt": r.add_generation_prompt,
                            "outcome": r.outcome, "output": json_text(r.output), "error": json_text(r.error)}
                           for r in renders]}
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
        return status

    out = [f"{escape_text(key)} ({len(text.splitlines()) or 1} lines, {len(text.encode('utf-8', 'surrogateescape')):,} bytes)"]
    _numbered(text, out)
    out.append("")
    out.append(f"findings: {len(findings) or 'none'}")
    out.extend(f"  {f.severity.value} {f.code} [{f.rule}] {escape_text(f.message)}" for f in findings)
    for r in renders:
        agp = "" if r.conversation == "(all)" else f", add_generation_prompt={str(r.add_generation_prompt).lower()}"
        out.append("")
        out.append(f"render: {r.conversation}{agp}: {r.outcome}" + (f": {escape_text(r.error)}" if r.error else ""))
        if r.outcome == "ok":
            _numbered(r.output, out, indent="    ")
    sys.stdout.write("\n".join(out) + "\n")
    return status
