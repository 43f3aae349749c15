"""The hub: Clusternet's API over HTTP, with every object kept in NATS KV.

It is the only door users (and `cnet`) come in by. It validates with the same pydantic models
every service reads, writes spec with compare-and-set, and shows status that controllers keep
in separate buckets, merged on read, so users see Clusternet's shapes while writers never race.
"""
