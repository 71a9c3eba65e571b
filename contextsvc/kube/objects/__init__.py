"""The one place that knows Kubernetes object shapes: names, labels, manifests.

Everything else in the service deals in allocations; the modules here turn an allocation's
desired state into plain manifest dicts and read observed state back out of objects. One
module per kind (``sandbox``, ``claim``, ``warmpool``, ``pvc``, ``networkpolicy``, ``pod``,
``job``), beside what the kinds share: ``kinds`` (API coordinates), ``labels`` and
``names`` (the v1 contract), ``fields`` (any object's metadata and status), ``poolspec``
(an allocation's desired state), ``blueprint`` and ``hardening`` (what runs in a sandbox
Pod). Import each name from the module that defines it.
"""
