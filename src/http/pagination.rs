//! Paged lists: `limit` and `offset` in, one page out with the total.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeStruct, Serializer};
use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::error::ApiError;

/// An item of a paged list, and what its page is called: each list keeps its own name
/// for the items (`{"coes": […], "total": …}`), so one `Page` serves them all.
pub trait Listed: ToSchema {
    /// The field holding the items, e.g. `coes`.
    const FIELD: &'static str;
    /// The page's name in the OpenAPI document, e.g. `CoePage`.
    const PAGE: &'static str;
    /// The order of the items, for the document (`Newest first.`).
    const ORDER: Option<&'static str> = None;
}

/// One page of a list: the items (under `T::FIELD`), how many match in all, and the
/// `limit` and `offset` the page was read with.
#[derive(Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

impl<T> Page<T> {
    /// A page from what a service's `list` returns: the items and the total.
    pub fn new((items, total): (Vec<T>, i64), limit: i64, offset: i64) -> Self {
        Page {
            items,
            total,
            limit,
            offset,
        }
    }
}

impl<T: Listed + Serialize> Serialize for Page<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut page = serializer.serialize_struct(T::PAGE, 4)?;
        page.serialize_field(T::FIELD, &self.items)?;
        page.serialize_field("total", &self.total)?;
        page.serialize_field("limit", &self.limit)?;
        page.serialize_field("offset", &self.offset)?;
        page.end()
    }
}

impl<T: Listed> PartialSchema for Page<T> {
    fn schema() -> RefOr<Schema> {
        let int64 = |description: Option<&str>| {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .description(description)
        };
        let items = ArrayBuilder::new()
            .items(Ref::from_schema_name(T::name()))
            .description(T::ORDER);
        ObjectBuilder::new()
            .property(T::FIELD, items)
            .required(T::FIELD)
            .property(
                "total",
                int64(Some(
                    "How many match the filters in all, not only this page.",
                )),
            )
            .required("total")
            .property("limit", int64(None))
            .required("limit")
            .property("offset", int64(None))
            .required("offset")
            .into()
    }
}

/// Named by `T::PAGE`. Handlers name a page by an alias (`type CoePage =
/// Page<CoeSummary>`) in `body = …`, so that the document refers to it by that name.
impl<T: Listed> ToSchema for Page<T> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed(T::PAGE)
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((T::name().into_owned(), T::schema()));
        T::schemas(schemas);
    }
}

/// `limit` (1 to 500, default 50) and `offset` (0 or more, default 0) of a list.
pub fn limits(limit: Option<i64>, offset: Option<i64>) -> Result<(i64, i64), ApiError> {
    let limit = limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::field(
            "limit",
            format!("must be 1 to 500 (got {limit})"),
        ));
    }
    let offset = offset.unwrap_or(0);
    if offset < 0 {
        return Err(ApiError::field(
            "offset",
            format!("must be 0 or more (got {offset})"),
        ));
    }
    Ok((limit, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, ToSchema)]
    struct Thing {
        name: &'static str,
    }

    impl Listed for Thing {
        const FIELD: &'static str = "things";
        const PAGE: &'static str = "ThingPage";
    }

    #[test]
    fn a_page_names_its_items_after_the_list() {
        let page = Page::new((vec![Thing { name: "a" }], 7), 1, 2);
        assert_eq!(
            serde_json::to_string(&page).unwrap(),
            r#"{"things":[{"name":"a"}],"total":7,"limit":1,"offset":2}"#
        );
        assert_eq!(Page::<Thing>::name(), "ThingPage");
        let schema = serde_json::to_value(Page::<Thing>::schema()).unwrap();
        assert_eq!(
            schema["required"],
            serde_json::json!(["things", "total", "limit", "offset"])
        );
        assert_eq!(
            schema["properties"]["things"]["items"]["$ref"],
            "#/components/schemas/Thing"
        );
    }

    #[test]
    fn limits_are_bounded() {
        assert_eq!(limits(None, None).unwrap(), (50, 0));
        assert!(limits(Some(0), None).is_err());
        assert!(limits(Some(501), None).is_err());
        assert!(limits(None, Some(-1)).is_err());
    }
}
