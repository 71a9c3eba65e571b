"""Checks of the storage a request names, against the cluster: shared by the requests that
make PVCs (an allocation's workspace and artifacts, a named context)."""

from __future__ import annotations

import logging

from contextsvc.infra.errors import InvalidRequest
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import STORAGE_CLASS

logger = logging.getLogger(__name__)


def check_storage_classes(named: dict[str, str]) -> None:
    """Each StorageClass a request names exists (``named``: the field → the class): a PVC
    of a class the cluster lacks stays Pending for ever. One GET per class named, none when
    the request names none, and a class that exists is answered as before. A cluster that
    cannot say now is no reason to refuse: the PVC's events will say it
    (allocations/resync.py)."""
    for where, name in named.items():
        if not name:
            continue
        try:
            found = kube.get_object(STORAGE_CLASS, None, name)
        except kube.KubeError as error:
            logger.warning("could not check StorageClass %s: %s", name, error.message)
            continue
        if found is None:
            raise InvalidRequest(f'{where} "{name}": no such StorageClass in the cluster')
