// The SDK (issue #17): see /work/notes/design17.md until sdk/README.md exists.
export {};
