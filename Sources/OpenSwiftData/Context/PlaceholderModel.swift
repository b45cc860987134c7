import Observation

/// What ``ModelContext/model(for:)`` returns for an identifier of an entity the container does
/// not know: a model with no properties.
final class PlaceholderModel: PersistentModel {
    private var storage: any BackingData<PlaceholderModel>
    private let registrar = ObservationRegistrar()

    init(backingData: any BackingData<PlaceholderModel>) {
        self.storage = backingData
    }

    var persistentBackingData: any BackingData<PlaceholderModel> {
        get { storage }
        set { storage = newValue }
    }

    static var schemaMetadata: [Schema.PropertyMetadata] { [] }
}
