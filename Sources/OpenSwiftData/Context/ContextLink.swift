/// The one weak reference to a context that all of its models' storages share.
///
/// A storage holds the link strongly: registering a fetched model retains one shared object
/// instead of forming a weak reference of its own (which updates the context's side table, and
/// costs again when the storage is freed). The link's reference turns nil when the context goes,
/// for every model at once.
///
/// Not `Sendable`: like its context, it is confined to the context's isolation.
final class ContextLink {
    /// The context, while it exists.
    weak var context: ModelContext?
    /// Whether the context is saving (its save journal records what the save changes): a
    /// model's write checks this before reaching for the context.
    var isSaving = false

    init() {}
}
