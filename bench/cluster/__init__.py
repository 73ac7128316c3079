"""Runs on a Ray cluster: the cluster's nodes as the project sees them (nodes.py), the agent that runs the project's
own worker and sampler on a node (agent.py), and the launcher that places a run on a node and brings its events and
samples back to the supervisor, so that the live view, the store, Stop and the hooks treat it as a local run
(launch.py). Ray is imported only here, and only where a cluster is asked for (requirements-ray.txt).
"""
