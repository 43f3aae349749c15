"""clusternet-predictor: answers "how many replicas of this requirement can cluster X still take"
over NATS request/reply, from the node inventories agents report and the replicas bindings have
given clusters that are not running yet, so the scheduler's dynamic dividing never needs a route
into any cluster (Clusternet's scheduler calls a predictor in each cluster over HTTP).
"""
