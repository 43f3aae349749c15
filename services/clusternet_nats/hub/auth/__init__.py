"""Who is asking and may they: TLS serving, authentication and authorization of the hub's HTTP API.

Built as kube-apiserver (and an aggregated apiserver) does it, so operators reuse what they
know: static token files, client certificates (CN user, O groups), delegated TokenReview and
SubjectAccessReview, request attributes derived from the path, 401/403 as `Status` objects.
"""
