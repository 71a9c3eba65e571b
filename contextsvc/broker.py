"""The Celery broker transport: kombu's Redis transport, with acknowledgements that outlive a
Redis restart.

A task's late acknowledgement that the worker sends while it re-establishes a lost broker
connection fails inside kombu's Redis channel with an AttributeError (the channel has
already dropped its connection), which kombu does not count among the connection errors it
logs and survives, so it ended the whole worker: in the soak, 20 of 26 Redis restarts took
a worker down with them (docs/performance.md). The message is still among the broker's
unacknowledged ones, which kombu hands back to the queue, and every task here is
idempotent: it may run again, nothing is lost. So an acknowledgement (or a rejection), or the
closing of such a channel, that fails that way is logged, as kombu logs the connection
errors it expects, and the worker goes on to reconnect (``CELERY_BROKER_TRANSPORT``,
tests/faults/test_redis.py).
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import redis
from kombu.transport.virtual import base

logger = logging.getLogger(__name__)


class Message(base.Message):
    def ack_log_error(self, logger: Any, errors: Any, multiple: bool = False) -> None:
        super().ack_log_error(logger, (*errors, AttributeError), multiple=multiple)

    def reject_log_error(self, logger: Any, errors: Any, requeue: bool = False) -> None:
        super().reject_log_error(logger, (*errors, AttributeError), requeue=requeue)


class Channel(redis.Channel):
    Message = Message

    def close(self) -> None:
        """Closing the channel of a connection Redis dropped tries to hand the unacknowledged
        messages back first, and fails the same way; the worker then reconnects. Those
        messages stay among the broker's unacknowledged ones (kombu hands them back after
        the visibility timeout), and the resync queues again whatever a lost task left
        undone within seconds."""
        try:
            super().close()
        except AttributeError as exc:
            logger.warning("closed a broker channel whose connection was gone (%r)", exc)


class Transport(redis.Transport):
    Channel = Channel
