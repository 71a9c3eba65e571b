"""The Kubernetes boundary.

``client`` is the only module that talks to the API server; ``objects`` (added with the
allocation engine) is the only one that knows object names, labels and manifests.
"""
