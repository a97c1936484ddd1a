"""A real SMTP server for the email tests (aiosmtpd), started by the tests themselves.

Usage: smtp_server.py PORT MAILDIR [--starttls CERT KEY] [--auth USER:PASSWORD] [--delay-ms N]

Accepts every message into MAILDIR (one file per message, with the envelope in
X-MailFrom / X-RcptTo headers, as aiosmtpd's Mailbox handler does), except that it
answers `550 5.1.1` to recipients whose address starts with `bounce`: a permanent
failure, as a real server gives for an unknown mailbox. With --starttls it requires
STARTTLS with that certificate; with --auth it requires that login (after STARTTLS).
With --delay-ms it takes that long over each message before storing it and answering
(a slow server: a sender killed meanwhile was in the middle of a send).
"""

import argparse
import asyncio
import mailbox
import signal
import ssl

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword


class Handler(Mailbox):
    delay = 0.0

    async def handle_DATA(self, server, session, envelope):
        if self.delay:
            await asyncio.sleep(self.delay)
        return await super().handle_DATA(server, session, envelope)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower().startswith("bounce"):
            return "550 5.1.1 <%s>: mailbox unavailable" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("maildir")
    parser.add_argument("--starttls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--auth", metavar="USER:PASSWORD")
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args()

    mailbox.Maildir(args.maildir, create=True)
    options = {}
    if args.starttls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*args.starttls)
        options.update(tls_context=context, require_starttls=True)
    if args.auth:
        user, password = args.auth.split(":", 1)

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = (
                isinstance(auth_data, LoginPassword)
                and auth_data.login.decode() == user
                and auth_data.password.decode() == password
            )
            # handled=False: aiosmtpd answers 535 itself on a failure.
            return AuthResult(success=ok, handled=False)

        options.update(authenticator=authenticator, auth_required=True)
    handler = Handler(args.maildir)
    handler.delay = args.delay_ms / 1000
    controller = Controller(handler, hostname="127.0.0.1", port=args.port, **options)
    controller.start()
    print("ready", flush=True)
    try:
        signal.sigwait([signal.SIGTERM, signal.SIGINT])
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
