import Foundation

/// An error thrown by OpenSwiftData.
///
/// Errors compare by their code only, so `catch SwiftDataError.loadIssueModelContainer` matches
/// an error whatever its detail. The ``detail`` names what was wrong: the entity, the property,
/// the value or the SQLite error.
public struct SwiftDataError: Error, Hashable, CustomStringConvertible, LocalizedError, Sendable {
    /// The kinds of error, as SwiftData names them, plus a few of OpenSwiftData's own.
    enum Code: String, Sendable {
        case includePendingChangesWithBatchSize
        case unsupportedPredicate
        case unsupportedKeyPath
        case sortingPendingChangesWithIdentifiers
        case unsupportedSortDescriptor
        case duplicateConfiguration
        case configurationFileNameTooLong
        case configurationFileNameContainsInvalidCharacters
        case configurationSchemaNotFoundInContainerSchema
        case loadIssueModelContainer
        case modelValidationFailure
        case missingModelContext
        case backwardMigration
        case unknownSchema
        case historyTokenExpired
        case invalidTransactionFetchRequest
        case readOnlyStore
        case incompatibleSchema
        case notAStore
        case valueEncodingFailure
        case valueDecodingFailure
        case storeFailure
        case missingExternalData
    }

    let code: Code
    /// What went wrong, naming the entity, property or store involved.
    public let detail: String
    /// The entity involved, if any.
    public let entityName: String?
    /// The property involved, if any.
    public let propertyName: String?

    init(_ code: Code, _ detail: String = "", entity: String? = nil, property: String? = nil) {
        self.code = code
        self.detail = detail
        self.entityName = entity
        self.propertyName = property
    }

    /// A description of the error and its detail.
    public var description: String {
        detail.isEmpty ? "SwiftDataError.\(code.rawValue)" : "SwiftDataError.\(code.rawValue): \(detail)"
    }

    /// The same text as ``description``.
    public var errorDescription: String? { description }

    /// Compares codes only.
    public static func == (lhs: SwiftDataError, rhs: SwiftDataError) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Matches any error that is a `SwiftDataError` with the same code, for `catch` patterns.
    public static func ~= (lhs: SwiftDataError, rhs: any Error) -> Bool {
        guard let error = rhs as? SwiftDataError else { return false }
        return error.code == lhs.code
    }

    /// `fetch(_:batchSize:)` was asked to include pending changes.
    public static let includePendingChangesWithBatchSize = SwiftDataError(.includePendingChangesWithBatchSize)
    /// A predicate could not be evaluated.
    public static let unsupportedPredicate = SwiftDataError(.unsupportedPredicate)
    /// A key path does not name a stored property.
    public static let unsupportedKeyPath = SwiftDataError(.unsupportedKeyPath)
    /// Fetching identifiers sorted while pending changes are included.
    public static let sortingPendingChangesWithIdentifiers = SwiftDataError(.sortingPendingChangesWithIdentifiers)
    /// A sort descriptor could not be applied.
    public static let unsupportedSortDescriptor = SwiftDataError(.unsupportedSortDescriptor)
    /// Two configurations share a name.
    public static let duplicateConfiguration = SwiftDataError(.duplicateConfiguration)
    /// A configuration's file name is too long.
    public static let configurationFileNameTooLong = SwiftDataError(.configurationFileNameTooLong)
    /// A configuration's file name contains characters a file name cannot hold.
    public static let configurationFileNameContainsInvalidCharacters = SwiftDataError(.configurationFileNameContainsInvalidCharacters)
    /// A configuration names an entity the container's schema lacks.
    public static let configurationSchemaNotFoundInContainerSchema = SwiftDataError(.configurationSchemaNotFoundInContainerSchema)
    /// The container could not load its store.
    public static let loadIssueModelContainer = SwiftDataError(.loadIssueModelContainer)
    /// A save would break a model's constraints.
    public static let modelValidationFailure = SwiftDataError(.modelValidationFailure)
    /// An operation needs a model that is registered in a context.
    public static let missingModelContext = SwiftDataError(.missingModelContext)
    /// The store was written by a newer schema than the app knows.
    public static let backwardMigration = SwiftDataError(.backwardMigration)
    /// The store's schema matches none the app knows.
    public static let unknownSchema = SwiftDataError(.unknownSchema)
    /// A history token is older than the retained history.
    public static let historyTokenExpired = SwiftDataError(.historyTokenExpired)
    /// A history descriptor cannot be evaluated.
    public static let invalidTransactionFetchRequest = SwiftDataError(.invalidTransactionFetchRequest)

    /// OpenSwiftData: `save()` on a context whose configuration has `allowsSave == false`.
    public static let readOnlyStore = SwiftDataError(.readOnlyStore)
    /// OpenSwiftData: the store was created with a different schema and no migration applies.
    public static let incompatibleSchema = SwiftDataError(.incompatibleSchema)
    /// OpenSwiftData: the file at the store URL is not an SQLite database, is corrupt, or is an
    /// SQLite database that OpenSwiftData did not create.
    public static let notAStore = SwiftDataError(.notAStore)
    /// OpenSwiftData: a property value could not be encoded for storage.
    public static let valueEncodingFailure = SwiftDataError(.valueEncodingFailure)
    /// OpenSwiftData: a stored value could not be decoded into the property's type.
    public static let valueDecodingFailure = SwiftDataError(.valueDecodingFailure)
    /// OpenSwiftData: SQLite reported an error while reading or writing the store.
    public static let storeFailure = SwiftDataError(.storeFailure)
    /// OpenSwiftData: the file beside the store that keeps an `.externalStorage` value is missing
    /// or damaged; ``entityName`` and ``propertyName`` say whose value, ``detail`` the file's
    /// SHA-256 digest and path.
    public static let missingExternalData = SwiftDataError(.missingExternalData)
}
