"""Start, reuse and stop the local test control plane.

Everything listens on 127.0.0.1 only. The processes are: etcd (data in tmpfs, no fsync),
kube-apiserver, kube-controller-manager (a few controllers), kube-scheduler, kwok (fake
nodes that turn scheduled Pods Running and Ready), the agent-sandbox controller with its
extensions, and a tiny fake dynamic volume provisioner (``testenv/provisioner.py``).

Runtime state lives in ``<repo>/.local/cluster/`` (override: ``CS_CLUSTER_DIR``): the state
file with the PIDs we started, certificates, tokens, kubeconfigs, configs and ``logs/``.
``CS_CLUSTER_INSTANCE=N`` (N > 0) is a second, independent control plane beside it: its
state in ``.local/cluster-N/``, every port 100 × N higher (the suite's parallel processes,
docs/testing.md).
Pod, Service and Node addresses of this cluster are fake (loopback-range numbers that
nothing serves); never connect to them, and never use logs/exec/attach/port-forward.

A module per concern: ``instance`` (paths, ports, addresses), ``state`` (the state file),
``processes`` and ``health`` (starting, stopping and checking processes), ``credentials``
(certificates, tokens, kubeconfigs), ``components`` (each process's command line),
``bootstrap`` (the CRDs, nodes and StorageClasses), ``lifecycle`` (``up``, ``down``,
``status``), ``client``, ``handle``, ``namespaces`` and ``demo`` (what tests and the local
stack use). Import each name from the module that defines it.
"""
