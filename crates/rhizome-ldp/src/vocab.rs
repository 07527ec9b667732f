//! The IRIs of the LDP vocabulary (https://www.w3.org/ns/ldp) this crate uses.

pub const LDP: &str = "http://www.w3.org/ns/ldp#";
pub const RESOURCE: &str = "http://www.w3.org/ns/ldp#Resource";
pub const RDF_SOURCE: &str = "http://www.w3.org/ns/ldp#RDFSource";
pub const NON_RDF_SOURCE: &str = "http://www.w3.org/ns/ldp#NonRDFSource";
pub const CONTAINER: &str = "http://www.w3.org/ns/ldp#Container";
pub const BASIC_CONTAINER: &str = "http://www.w3.org/ns/ldp#BasicContainer";
pub const DIRECT_CONTAINER: &str = "http://www.w3.org/ns/ldp#DirectContainer";
pub const INDIRECT_CONTAINER: &str = "http://www.w3.org/ns/ldp#IndirectContainer";
pub const CONTAINS: &str = "http://www.w3.org/ns/ldp#contains";
pub const MEMBER: &str = "http://www.w3.org/ns/ldp#member";
pub const MEMBERSHIP_RESOURCE: &str = "http://www.w3.org/ns/ldp#membershipResource";
pub const HAS_MEMBER_RELATION: &str = "http://www.w3.org/ns/ldp#hasMemberRelation";
pub const IS_MEMBER_OF_RELATION: &str = "http://www.w3.org/ns/ldp#isMemberOfRelation";
pub const INSERTED_CONTENT_RELATION: &str = "http://www.w3.org/ns/ldp#insertedContentRelation";
pub const MEMBER_SUBJECT: &str = "http://www.w3.org/ns/ldp#MemberSubject";
pub const CONSTRAINED_BY: &str = "http://www.w3.org/ns/ldp#constrainedBy";
pub const PREFER_CONTAINMENT: &str = "http://www.w3.org/ns/ldp#PreferContainment";
pub const PREFER_MEMBERSHIP: &str = "http://www.w3.org/ns/ldp#PreferMembership";
pub const PREFER_MINIMAL_CONTAINER: &str = "http://www.w3.org/ns/ldp#PreferMinimalContainer";
/// The deprecated name some clients (and the 0.1.1 test suite) still send.
pub const PREFER_EMPTY_CONTAINER: &str = "http://www.w3.org/ns/ldp#PreferEmptyContainer";
pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
pub const DESCRIBED_BY: &str = "http://www.w3.org/2007/05/powder-s#describedby";

/// The predicates of a container's membership settings (only database
/// admins may set them).
pub const MEMBERSHIP_PREDICATES: &[&str] = &[MEMBERSHIP_RESOURCE, HAS_MEMBER_RELATION, IS_MEMBER_OF_RELATION, INSERTED_CONTENT_RELATION];
