"""A real SMTP server for the email tests (aiosmtpd), started by the tests themselves.

Usage: smtp_server.py PORT MAILDIR

Accepts every message into MAILDIR (one file per message, with the envelope in
X-MailFrom / X-RcptTo headers, as aiosmtpd's Mailbox handler does), except that it
answers `550 5.1.1` to recipients whose address starts with `bounce`: a permanent
failure, as a real server gives for an unknown mailbox.
"""

import mailbox
import signal
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox


class Handler(Mailbox):
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower().startswith("bounce"):
            return "550 5.1.1 <%s>: mailbox unavailable" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"


def main():
    port = int(sys.argv[1])
    directory = sys.argv[2]
    mailbox.Maildir(directory, create=True)
    controller = Controller(Handler(directory), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    try:
        signal.sigwait([signal.SIGTERM, signal.SIGINT])
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
