"""Store errors, shaped like the Kubernetes API's (NotFound, AlreadyExists, Conflict)."""


class StoreError(Exception):
    """Base of all store errors."""


class NotFoundError(StoreError):
    def __init__(self, bucket: str, key: str) -> None:
        super().__init__(f"{bucket} {key!r} not found")
        self.bucket, self.key = bucket, key


Stored = tuple[bytes, int]
"""A record as stored: its value and revision."""


class ConflictError(StoreError):
    """A compare-and-set lost: someone else wrote the key since we read it.

    `current` is the record it lost to when the store said so (a create that found a live key,
    and every 409 of the hub's intake): the writer builds on it instead of reading again, which
    for a registered cluster would be another request to the hub."""

    def __init__(self, bucket: str, key: str, detail: str = "", current: Stored | None = None) -> None:
        msg = f"conflict writing {bucket} {key!r}: the object has been modified; read it again and retry"
        super().__init__(f"{msg} ({detail})" if detail else msg)
        self.bucket, self.key, self.current = bucket, key, current


class AlreadyExistsError(ConflictError):
    def __init__(self, bucket: str, key: str, current: Stored | None = None) -> None:
        StoreError.__init__(self, f"{bucket} {key!r} already exists")
        self.bucket, self.key, self.current = bucket, key, current


class IntakeRefusedError(StoreError):
    """The hub's intake refused a cluster's write (api/intake.py); `code` says why, as HTTP does."""

    def __init__(self, bucket: str, key: str, code: int, reason: str) -> None:
        super().__init__(f"the hub refused writing {bucket} {key!r} ({code}): {reason}")
        self.bucket, self.key, self.code = bucket, key, code


class UndecodableError(StoreError):
    """A stored value that no longer decodes (written by hand, or before a limit existed): reported,
    skipped by lists and watches, and deletable by its key (`revision` is the one to delete)."""

    def __init__(self, bucket: str, key: str, revision: int, detail: str) -> None:
        super().__init__(f"the stored value of {bucket} {key!r} (revision {revision}) cannot be decoded: {detail}")
        self.bucket, self.key, self.revision = bucket, key, revision


class InvalidError(StoreError):
    """A write the API's rules refuse whatever the revision (e.g. a finalizer added to an object
    being deleted); the message names the field, in kube-apiserver's words."""

    def __init__(self, bucket: str, key: str, detail: str) -> None:
        super().__init__(f"{bucket} {key!r} is invalid: {detail}")
        self.bucket, self.key, self.detail = bucket, key, detail
