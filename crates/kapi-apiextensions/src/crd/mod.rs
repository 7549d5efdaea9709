//! The strategies of CustomResourceDefinitions and of custom objects.
