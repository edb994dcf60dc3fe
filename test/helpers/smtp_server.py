"""A real SMTP server on loopback for the email webhook tests (test/helpers/smtp.ts starts it).

aiosmtpd (PyPI; test/preflight.ts installs it into .tmp/aiosmtpd when missing). Listens on
127.0.0.1 on a free port, prints {"port": N} as its first line, then one JSON line per message it
accepted: the envelope (MAIL FROM, RCPT TO), the login that sent it, every header, and the plain
text and HTML bodies as a mail client would show them (Python's email package decodes them).

  --user U --password P   require AUTH (PLAIN or LOGIN, no TLS needed on loopback) with these
  recipients containing "reject" are refused (550), and a message to one containing "tempfail" is
  answered 451 at DATA: the tests read these replies back from the delivery's attempts.
"""

import argparse
import asyncio
import itertools
import json
import sys

from email import policy
from email.parser import BytesParser

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

ids = itertools.count(1)


class Handler:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if "reject" in address:
            return "550 5.1.1 <%s>: mailbox unavailable" % address
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 Ok"

    async def handle_DATA(self, server, session, envelope):
        if any("tempfail" in r for r in envelope.rcpt_tos):
            return "451 4.3.0 try again later"
        msg = BytesParser(policy=policy.default).parsebytes(envelope.original_content or envelope.content)
        text = msg.get_body(("plain",))
        html = msg.get_body(("html",))
        n = next(ids)
        print(
            json.dumps(
                {
                    "id": n,
                    "mailFrom": envelope.mail_from,
                    "rcptTos": envelope.rcpt_tos,
                    "login": getattr(session, "vigil_login", None),
                    "headers": {k.lower(): str(v) for k, v in msg.items()},
                    "text": text.get_content() if text is not None else None,
                    "html": html.get_content() if html is not None else None,
                }
            ),
            flush=True,
        )
        return "250 2.0.0 Ok: queued as TEST%06d" % n


def authenticator_for(user, password):
    def authenticate(server, session, envelope, mechanism, auth_data):
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = auth_data.login.decode()
        if login == user and auth_data.password.decode() == password:
            session.vigil_login = login
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    return authenticate


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--user")
    ap.add_argument("--password")
    args = ap.parse_args()
    auth = authenticator_for(args.user, args.password) if args.user else None
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(
            Handler(),
            hostname="smtp.test",
            authenticator=auth,
            auth_required=auth is not None,
            auth_require_tls=False,
        ),
        "127.0.0.1",
        0,
    )
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    # Ends with the test process: its stdin closes.
    await loop.run_in_executor(None, sys.stdin.read)


asyncio.run(main())
