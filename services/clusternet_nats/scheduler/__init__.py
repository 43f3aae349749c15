"""clusternet-scheduler: decides which clusters each Subscription binds to, and how many replicas
each gets, and writes that decision to the `bindings` bucket for the deployer to act on.

Shaped like the Kubernetes scheduling framework (filter and score plugins run by a profile,
then a placement strategy) so new rules are new plugins, not edits to the loop.
"""
