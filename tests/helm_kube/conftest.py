from tests.deployer.test_deployer import deployer, hub

__all__ = ["deployer", "hub"]
