"""The in-tree scheduler plugins, one module each; `registry.in_tree_registry` names them."""
