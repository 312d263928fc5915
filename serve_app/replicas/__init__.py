"""The Serve classes (the Orchestrator ingress, the model replicas' one body, the Planner), bound in `serve_app.app`,
and the clients the Orchestrator calls the model deployments through."""
