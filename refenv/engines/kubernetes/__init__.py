"""Cells as Kubernetes Jobs: rendered as plain manifests (`jobs`), checked offline (`validate`), and run
through the official client (`client`): create, watch the pod, read the result from its log, delete."""
