"""Remote executors (SPEC §1 scale-out, seed §4): steps that run on another machine.

A manifest's `runs_on` names a place (`[remote] pools` maps it to a Prefect work pool); the
step goes to that pool as a run of the `remote-step/<pool>` deployment (`flows/remote_step.py`),
which a Prefect worker on that machine picks up. Nothing here imports prefect: the composition
root hands in a `RemotePort` (`metnos.features.remote.port`).

- `server`: the server's side of a step (prepare on the laptop, sign and keep the before-record
  here, then apply there), each reply from the laptop treated as untrusted data;
- `worker`: the laptop's side, which checks everything again (signature, arguments, paths,
  sandbox) against its own METNOS_HOME;
- `record`: the remote before-record, signed and dated on the server;
- `undo`: `metnos undo` of a remote action: the inverse batch, back to the same pool.
"""
