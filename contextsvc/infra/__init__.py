"""The infrastructure every app stands on and none of it knows the domain of: the request
contract (declarations, the strict JSON reader), errors and their bodies, the task queue's
names and retry policy, live events, locks, managed volumes, the OpenAPI document's hooks,
sealed secrets, validators, the namespace allow-list and StorageClass checks, the token
cache. Tenancy and identity (teams, limits, users, API clients, audit) are contextsvc.core,
above it.
"""
