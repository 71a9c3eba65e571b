"""Writes for named contexts (``/v1/contexts``): a labelled PVC, ready once Bound, deleted
with its PVC. State changes record their audit entry in the same transaction and queue work
after commit (contexts/queue.py); the tasks only hand ids to the functions here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from contexts import queue
from contexts.models import ContextResource, ContextType
from contexts.requests import ContextRequest
from contexts.selectors import context_not_found
from contextsvc.core.models import default_team_pk
from contextsvc.core.services import SERVICE_ACTOR, audit_record
from contextsvc.core.teams import Reach, check_team_namespace, storage_check, team_lock
from contextsvc.infra import namespaces
from contextsvc.infra.errors import (
    AlreadyExists,
    InvalidRequest,
    kubernetes_failure,
)
from contextsvc.infra.queue import Retry, RetryLater, backoff
from contextsvc.infra.storage import check_storage_classes
from contextsvc.infra.volumes import Volume, VolumeKey, VolumeTaken
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.names import context_pvc_name
from contextsvc.kube.objects.pvc import context_manifest_of, is_context_pvc, pvc_is_bound
from contextsvc.quantity import parse_quantity

# A PVC leaves through its controller: poll that long at most before leaving the rest to
# the watcher and the periodic resync (as an allocation's release does).
DELETE_POLLS = 60
# Its name in the registry of volumes (contextsvc/infra/volumes.py).
VOLUME_KIND = "context"
# A context's PVC create that keeps failing transiently is given up after this many.
CONTEXT_RETRY = Retry(attempts=10)


def context_keep_artifacts(
    *,
    namespace: str,
    name: str,
    size: str,
    access_mode: str,
    storage_class: str,
    requester: str,
    from_allocation: str,
    team_id: int | None,
) -> ContextResource | None:
    """Record a released allocation's artifacts volume as a named context of type artifacts
    (its PVC is relabelled by the release). In the caller's transaction; idempotent: None
    when the context is there already."""
    with transaction.atomic():
        if (
            ContextResource.objects.filter(namespace=namespace, name=name)
            .exclude(status=ContextResource.Status.DELETED)
            .exists()
        ):
            return None
        context = ContextResource.objects.create(
            namespace=namespace,
            name=name,
            type=ContextType.ARTIFACTS,
            size=size,
            access_mode=access_mode,
            storage_class=storage_class,
            requester=requester,
            team_id=team_id,
        )
        audit_record(
            actor=SERVICE_ACTOR,
            team_id=context.team_id,
            action="context.create",
            target_type="context",
            target=f"{namespace}/{name}",
            payload={"type": "artifacts", "from_allocation": from_allocation},
        )
    return context


@dataclass(frozen=True)
class ContextCreated:
    context: ContextResource
    # Set when the PVC could not be created within the request (the worker keeps trying).
    message: str = ""


def _context_taken(name: str, namespace: str) -> AlreadyExists:
    return AlreadyExists(f'context "{name}" already exists in namespace "{namespace}"')


def _context_refused(error: kube.KubeError, namespace: str) -> Exception:
    """The domain error for a PVC the cluster will not take, whatever we retry."""
    if error.status == 404:
        # A PVC's resource type always exists: a 404 on create is the namespace.
        return InvalidRequest(f'namespace "{namespace}" does not exist')
    if error.status == 422:
        return InvalidRequest(f"the cluster refused the context's PVC: {error.message}")
    return kubernetes_failure(error)


def context_create(
    *, request: ContextRequest, actor: str, team_id: int | None = None
) -> ContextCreated:
    """Record the context and create its PVC in the request, as the Go service did: when
    the 201 arrives, callers mount ``attachment.claimName`` at once.

    The API server first checks the PVC in a dry run, so that a request the cluster would
    refuse (no such namespace, an invalid spec) is a 4xx with nothing written. The row and
    its audit entry are committed before the real create; a transient failure of that
    create leaves the PVC to the worker, and the response says so."""
    namespaces.check_requested(request.namespace)
    team_id = team_id if team_id is not None else default_team_pk()
    check_team_namespace(team_id, request.namespace)
    taken = _context_taken(request.name, request.namespace)
    if (
        ContextResource.objects.filter(name=request.name, namespace=request.namespace)
        .exclude(status=ContextResource.Status.DELETED)
        .exists()
    ):
        raise taken
    check_storage_classes({"storage.storageClass": request.storage_class})
    context = ContextResource(
        name=request.name,
        namespace=request.namespace,
        type=request.type,
        size=request.size,
        access_mode=request.access_mode,
        storage_class=request.storage_class,
        requester=actor,
        team_id=team_id,
    )
    context.full_clean(validate_constraints=False)
    try:
        if not kube.create_if_absent(PVC, context_manifest_of(context), dry_run=True):
            raise taken
    except kube.KubeError as error:
        if not error.transient:
            raise _context_refused(error, request.namespace) from error
        # The worker meets the same cluster later; the row is worth writing.
    try:
        with transaction.atomic():
            # Locked first: a burst of one team's creates is counted one after the other.
            storage_check(team_lock(team_id), more=int(parse_quantity(context.size)))
            context.save()
            audit_record(
                actor=actor,
                team_id=context.team_id,
                action="context.create",
                target_type="context",
                target=f"{context.namespace}/{context.name}",
                payload={"type": context.type, "size": context.size},
            )
    except IntegrityError:
        raise taken from None
    try:
        context_apply(context_id=context.pk)
    except kube.KubeError as error:
        if not error.transient:
            context_fail(context_id=context.pk, message=error.message)
            raise _context_refused(error, request.namespace) from error
        queue.reconcile_context(context.pk)
        context.refresh_from_db()
        return ContextCreated(
            context,
            f"the PVC could not be created yet ({error.message}); the service keeps trying",
        )
    except ContextNameTaken:
        raise taken from None
    context.refresh_from_db()
    return ContextCreated(context)


class ContextNameTaken(Exception):
    """A PVC of somebody else's sits under the context's PVC name."""


def context_apply(*, context_id: int) -> str:
    """Create a provisioning context's PVC; idempotent (one that exists with the context's
    labels counts as done). Raises ``kube.KubeError`` as the cluster answered, and
    ``ContextNameTaken`` (after marking the context deleted: it never had a PVC of its
    own) when a foreign PVC holds the name."""
    context = ContextResource.objects.filter(
        pk=context_id, status=ContextResource.Status.PROVISIONING
    ).first()
    if context is None:
        return "nothing to do"
    try:
        return (
            "created" if context_volume(context).apply(context_manifest_of(context)) else "exists"
        )
    except VolumeTaken:
        _context_drop(context, reason="its PVC name is held by an object the service does not own")
        raise ContextNameTaken(context.name) from None


def context_reconcile(context_id: int, attempt: int = 0) -> str:
    """The safety net behind ``POST /v1/contexts``, which creates the PVC itself: this
    runs when that create failed transiently, or when the resync finds a context whose PVC
    never appeared."""
    try:
        return context_apply(context_id=context_id)
    except ContextNameTaken:
        return "name taken"
    except kube.KubeError as error:
        later = CONTEXT_RETRY.again(transient=error.transient, attempt=attempt)
        if later is not None:
            raise later from error
        context_fail(context_id=context_id, message=error.message)
        return "failed"


def _context_drop(context: ContextResource, *, reason: str) -> None:
    with transaction.atomic():
        updated = ContextResource.objects.filter(
            pk=context.pk, status=ContextResource.Status.PROVISIONING
        ).update(
            status=ContextResource.Status.DELETED,
            message=reason,
            deleted_at=Now(),
            updated_at=Now(),
        )
        if updated:
            audit_record(
                actor=SERVICE_ACTOR,
                team_id=context.team_id,
                action="context.fail",
                target_type="context",
                target=f"{context.namespace}/{context.name}",
                payload={"message": reason},
            )


def context_delete(*, namespace: str, name: str, actor: str, reach: Reach) -> ContextResource:
    with transaction.atomic():
        context = reach.narrow(
            ContextResource.objects.select_for_update().filter(
                namespace=namespace,
                name=name,
                status__in=(
                    ContextResource.Status.PROVISIONING,
                    ContextResource.Status.READY,
                    ContextResource.Status.FAILED,
                ),
            )
        ).first()
        if context is None:
            raise context_not_found(namespace, name)
        context.status = ContextResource.Status.DELETING
        context.save(update_fields=["status", "updated_at"])
        audit_record(
            actor=actor,
            team_id=context.team_id,
            action="context.delete",
            target_type="context",
            target=f"{namespace}/{name}",
        )
        queue.delete_context(context.pk)
    return context


def context_delete_objects(context_id: int, attempt: int = 0) -> str:
    """Delete a deleting context's PVC, polling until it is gone. Only the context's own
    PVC is deleted: a failed context may never have had one, and an object of somebody
    else's under that name is theirs."""
    context = ContextResource.objects.filter(
        pk=context_id, status=ContextResource.Status.DELETING
    ).first()
    if context is None:
        return "nothing to do"
    try:
        left = context_volume(context).delete()
    except kube.KubeError as exc:
        raise RetryLater(backoff(attempt)) from exc
    if left is None:
        context_record_observed(context=context, pvc=None)
        return "deleted"
    if attempt < DELETE_POLLS:
        raise RetryLater(1.0)
    return "pending"


def context_volume(context: ContextResource) -> Volume:
    return Volume(
        context.namespace,
        context_pvc_name(context.name),
        owns=lambda pvc: is_context_pvc(pvc, context.name),
    )


def context_pvc_observed(key: VolumeKey, pvc: Mapping[str, Any] | None) -> bool:
    """What the watcher saw of a named context's PVC (None: none of the context's is
    there), recorded on the context (volumes.VolumeKind.record)."""
    namespace, name = key
    context = (
        ContextResource.objects.filter(namespace=namespace, name=name)
        .exclude(status=ContextResource.Status.DELETED)
        .first()
    )
    return context is not None and context_record_observed(context=context, pvc=pvc)


def context_record_observed(*, context: ContextResource, pvc: Mapping[str, Any] | None) -> bool:
    """The one decision the watcher, the resync and the delete task make about a
    context's PVC (None: there is none of the context's own): a deleting context is
    deleted once it is gone; otherwise Bound means ready. True when it changed."""
    if pvc is not None and not is_context_pvc(pvc, context.name):
        pvc = None
    if context.status == ContextResource.Status.DELETING:
        return context_observe(context_id=context.pk, bound=None, gone=pvc is None)
    if pvc is None:
        return False
    return context_observe(context_id=context.pk, bound=pvc_is_bound(pvc))


def context_observe(*, context_id: int, bound: bool | None, gone: bool = False) -> bool:
    """Record what the cluster says of a context's PVC (Bound / gone)."""
    if gone:
        return bool(
            ContextResource.objects.filter(
                pk=context_id, status=ContextResource.Status.DELETING
            ).update(status=ContextResource.Status.DELETED, deleted_at=Now(), updated_at=Now())
        )
    if bound is None:
        return False
    target = ContextResource.Status.READY if bound else ContextResource.Status.PROVISIONING
    return bool(
        ContextResource.objects.filter(
            pk=context_id,
            status__in=(ContextResource.Status.PROVISIONING, ContextResource.Status.READY),
        )
        .exclude(status=target)
        .update(status=target, updated_at=Now())
    )


def context_fail(*, context_id: int, message: str) -> None:
    with transaction.atomic():
        updated = ContextResource.objects.filter(
            pk=context_id, status=ContextResource.Status.PROVISIONING
        ).update(status=ContextResource.Status.FAILED, message=message, updated_at=Now())
        if updated:
            context = ContextResource.objects.get(pk=context_id)
            audit_record(
                actor=SERVICE_ACTOR,
                team_id=context.team_id,
                action="context.fail",
                target_type="context",
                target=f"{context.namespace}/{context.name}",
                payload={"message": message},
            )
