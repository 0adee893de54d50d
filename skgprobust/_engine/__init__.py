"""Layer 2, the engine: latent-model protocol, objectives, branch and bound,
controllers, local search, perturbation sets, row mapping and the driver
that every question goes through. Imports only the bounds layer. Private.
"""
