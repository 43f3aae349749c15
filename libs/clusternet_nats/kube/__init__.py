"""Talking to a kube-apiserver: one raw JSON client and a RESTMapper, shared by every service
that does (the agent's kube backend applies Descriptions to a child; the bridge mirrors CRDs on
a parent), so connection setup, errors and discovery are written once.
"""
