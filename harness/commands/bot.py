"""`python -m harness bot`: answer a GitHub issue event with refenv's diagnosis (action.yml runs this).

One run per event: read the payload GitHub wrote (GITHUB_EVENT_PATH), diagnose the issue's text as
`diagnose --from` would, and post, update or leave alone the bot's one comment (harness.answer.reply
decides; harness.answer.github talks to the API). The token comes from GITHUB_TOKEN and is only ever put
in the Authorization header; every line of the log passes through the one redactor
(harness/answer/redact.py). Exit status: 0 done (silence included: an issue whose comments could not all be
read in time gets no second answer), 1 GitHub refused or could not be reached, 2 bad input (no payload, a
payload that does not fit, an issue number below 1, no token or one that no HTTP header can carry),
3 internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from harness.answer import comment, event, github, reply
from harness.answer.redact import redact
from harness.inputs import InputError
from harness.schema.envelope import DiagnoseDocument

DEFAULT_API = "https://api.github.com"
DEFAULT_LOGIN = "github-actions[bot]"  # who GITHUB_TOKEN's comments are written by
FOOTER = ("refenv issue bot, harness {version}: read from the text of this issue only; edit the issue or "
          "paste the output asked for, and this answer follows")
CUT_NOTE = "(only the first 65,536 characters of a part of the issue were read: GitHub's own limit on a body)"


def register(sub: Any) -> None:
    p = sub.add_parser("bot", help="answer a GitHub issue event (GITHUB_EVENT_PATH) with one diagnosis comment",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--event", metavar="FILE", default=None,
                   help="the event payload (default: $GITHUB_EVENT_PATH)")
    p.add_argument("--event-name", default=None, help="issues or issue_comment (default: $GITHUB_EVENT_NAME)")
    p.add_argument("--label-prefix", default="", metavar="P",
                   help="label the issue P + verdict (e.g. 'cuda: ' gives 'cuda: driver-too-old') where the "
                        "comment states a verdict; default: no labels")
    p.add_argument("--bot-login", default=None, metavar="LOGIN",
                   help=f"whose comments are the bot's own (default: $REFENV_BOT_LOGIN or {DEFAULT_LOGIN})")
    p.add_argument("--dry-run", action="store_true",
                   help="print the comment it would post and call no API (no token needed)")
    p.set_defaults(func=run)


def diagnose_text(text: str, what: str) -> DiagnoseDocument | None:
    """The diagnosis document of the text, as `diagnose --from` makes it; None when it holds no fact."""
    from harness.diagnosis.report import judge_report
    from harness.intake import ReportError, load_report

    try:
        return judge_report(load_report(text.encode("utf-8")), what)
    except ReportError:
        return None


def render(ev: event.Event, doc: DiagnoseDocument) -> str:
    footer = FOOTER.format(version=doc.harness_version or "?")
    body = comment.render(doc, where=ev.where, marker=reply.MARKER, footer=footer)
    return body.rstrip("\n") + f"\n\n<sub>{CUT_NOTE}</sub>\n" if ev.cut else body


def _outputs(values: dict[str, str]) -> None:
    """The step's outputs (GITHUB_OUTPUT), for a workflow that acts on the verdict."""
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(f"{k}={v}\n" for k, v in values.items())


def _log(line: str, error: bool = False, known: tuple[str, ...] = ()) -> None:
    """One line of the workflow's log, which anyone who can read the repository's Actions reads: redacted."""
    print(redact(line, known), file=sys.stderr if error else sys.stdout)


def run(args: argparse.Namespace) -> int:
    path = args.event or os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        raise InputError("bot: no event payload: pass --event FILE or set GITHUB_EVENT_PATH (GitHub Actions does)")
    name = args.event_name or os.environ.get("GITHUB_EVENT_NAME", "")
    if name and name not in event.ANSWERED:
        _log(f"refenv issue bot: silent: a {event.valid_text(name)[:100]} event is not one it answers (issues, "
             "issue_comment)")
        return 0
    ev = event.read(path, name)
    login = args.bot_login or os.environ.get("REFENV_BOT_LOGIN") or DEFAULT_LOGIN
    say = f"refenv issue bot: {ev.repository}#{ev.number}"
    if not ev.answered:
        _log(f"{say}: silent: {ev.name} {ev.action} is not an event it answers")
        return 0
    if ev.pull_request or ev.author_is_bot or ev.author == login:
        _log(f"{say}: silent: {'a pull request' if ev.pull_request else 'written by a bot'}")
        return 0
    token = os.environ.get("GITHUB_TOKEN", "")
    known = (token,) if token else ()
    client = None if args.dry_run else github.Client(os.environ.get("GITHUB_API_URL") or DEFAULT_API,
                                                     ev.repository, token)
    doc = diagnose_text(ev.text(), f"issue #{ev.number}")
    body = render(ev, doc) if doc is not None else ""
    comments = None
    # An issue just opened has no earlier answer to follow: a quiet one needs no look (nor any request).
    if doc is not None and client is not None and not (ev.action == "opened" and reply.weight(doc) == reply.QUIET):
        try:
            found = client.find_comment(ev.number, lambda c: reply.own_comment([c], login) is not None,
                                        github.SEARCH_SECONDS)
        except github.SearchTimedOut as exc:  # an answer may be further on: a second one would be wrong
            _log(f"{say}: silent: {exc}", known=known)
            _outputs({"action": reply.SILENT, "verdict": "", "confidence": ""})
            return 0
        except github.GitHubError as exc:
            _log(f"{say}: {exc}", error=True, known=known)
            return 1
        comments = [found] if found is not None else []
    plan = reply.plan(doc, body, comments, login, ev.labels, args.label_prefix)
    stated = doc is not None and comment.states_verdict(doc)
    diag = doc.diagnosis if doc is not None else None
    verdict = diag.verdict if stated and diag is not None else ""
    confidence = diag.assessment.confidence if diag is not None and diag.assessment is not None else ""
    shown = f"{verdict}, {confidence} confidence" if verdict else f"no verdict: {confidence} confidence"
    _log(f"{say}: {plan.action}: {plan.why}" + (f" ({shown})" if doc is not None else ""), known=known)
    _outputs({"action": plan.action, "verdict": verdict, "confidence": confidence})
    if args.dry_run:
        if plan.body:
            sys.stdout.write(plan.body)
        return 0
    assert client is not None
    try:
        if plan.action == reply.CREATE:
            made = client.create_comment(ev.number, plan.body)
            _log(f"{say}: comment {made.get('id')} posted")
        elif plan.action == reply.UPDATE and plan.comment_id is not None:
            client.update_comment(plan.comment_id, plan.body)
            _log(f"{say}: comment {plan.comment_id} updated")
        for name in plan.remove_labels:
            client.remove_label(ev.number, name)
        if plan.add_labels:
            client.add_labels(ev.number, list(plan.add_labels))
    except github.GitHubError as exc:
        _log(f"{say}: {exc}", error=True, known=known)
        return 1
    return 0
