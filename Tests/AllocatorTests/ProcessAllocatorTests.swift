import Allocator
import Testing

/// The libraries do not bring mimalloc with them: an app (and this test
/// bundle, which links the libraries but not the executables' setting)
/// keeps the C library's malloc, and the check says so rather than
/// naming mimalloc because its library happens to be installed.
@Test func aProcessThatDoesNotLinkMimallocKeepsTheSystemMalloc() {
    #expect(ProcessAllocator.name == "system malloc")
    #expect(!ProcessAllocator.isMimalloc)
}
